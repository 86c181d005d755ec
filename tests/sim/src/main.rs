//! `tenure-sim`: runs seeds of the deterministic simulation; see `--help`.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::cast_precision_loss)]

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use tenure_sim::{Bugs, Coverage, Profile, SeedRun, replay_line, required_coverage, run_batch, run_guarded};

const HELP: &str = "\
tenure-sim: deterministic simulation of Tenure's core (and driver) under faults

USAGE: tenure-sim [--seed S] [--seeds N] [--profile NAME] [--inject-bug NAME[,NAME]] [--trace]
                  [--threads N] [--no-regressions] [--no-record]

  --seed S          first seed (default: drawn from the clock, and printed)
  --seeds N         how many seeds: S, S+1, ... (default 1)
  --profile NAME    mixed (default), calm, network, clocks, pauses, crashes, unbounded-clocks,
                    driver (the tenure driver itself on a simulated runtime and store)
  --inject-bug NAME switch on a deliberate defect: validity-from-reply, fence-reset-on-release,
                    leader-ignores-deadline, grant-validity-from-push, hand-over-lapsed,
                    rw-write-beside-readers, rw-poison-forgotten; the run must then fail (exit 1)
  --trace           print every event of seed S (one seed)
  --threads N       worker threads (default: the machine's cores)
  --no-regressions  skip the seeds of regressions.txt, which otherwise run first
  --no-record       do not add failing seeds to regressions.txt

Environment: TENURE_SIM_REGRESSIONS names another regressions file.

Exit status: 0 all seeds passed, 1 a seed failed, 2 bad usage, 3 a coverage counter stayed zero
over a batch of 100 seeds or more (the run would prove nothing).";

struct Options {
    seed: Option<u64>,
    seeds: u64,
    profile: Profile,
    bugs: Bugs,
    trace: bool,
    threads: usize,
    regressions: bool,
    record: bool,
}

fn parse() -> Result<Options, String> {
    let mut options = Options {
        seed: None,
        seeds: 1,
        profile: Profile::Mixed,
        bugs: Bugs::NONE,
        trace: false,
        threads: std::thread::available_parallelism().map_or(1, usize::from),
        regressions: true,
        record: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--seed" => options.seed = Some(number(&value("--seed")?, "--seed")?),
            "--seeds" => options.seeds = number(&value("--seeds")?, "--seeds")?,
            "--threads" => {
                options.threads = usize::try_from(number(&value("--threads")?, "--threads")?)
                    .map_err(|_| "--threads is too large".to_owned())?;
            }
            "--profile" => {
                let name = value("--profile")?;
                options.profile = Profile::from_name(&name).ok_or_else(|| {
                    let known: Vec<_> = Profile::NAMED.iter().map(|(n, _)| *n).collect();
                    format!("unknown profile {name:?}; known: {}", known.join(", "))
                })?;
            }
            "--inject-bug" => {
                for name in value("--inject-bug")?.split(',') {
                    let bug = Bugs::from_name(name).ok_or_else(|| {
                        let known: Vec<_> = Bugs::NAMED.iter().map(|(n, _)| *n).collect();
                        format!("unknown bug {name:?}; known: {}", known.join(", "))
                    })?;
                    options.bugs = options.bugs.union(bug);
                }
            }
            "--trace" => options.trace = true,
            "--no-regressions" => options.regressions = false,
            "--no-record" => options.record = false,
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if options.seeds == 0 {
        return Err("--seeds must be at least 1".to_owned());
    }
    Ok(options)
}

fn number(text: &str, flag: &str) -> Result<u64, String> {
    text.parse().map_err(|_| format!("{flag} takes a whole number, not {text:?}"))
}

/// `regressions.txt` next to this crate's manifest, or `TENURE_SIM_REGRESSIONS`.
fn regressions_file() -> PathBuf {
    std::env::var_os("TENURE_SIM_REGRESSIONS")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("regressions.txt"), PathBuf::from)
}

/// The seeds of the regressions file: `SEED PROFILE  # what failed`.
fn regressions() -> Result<Vec<(u64, Profile)>, String> {
    let path = regressions_file();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut seeds = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let bad = || format!("{}:{}: expected `SEED PROFILE`, found {line:?}", path.display(), n + 1);
        let seed = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
        let profile = words.next().and_then(Profile::from_name).ok_or_else(bad)?;
        seeds.push((seed, profile));
    }
    Ok(seeds)
}

fn record(run: &SeedRun, what: &str) {
    let path = regressions_file();
    let line = format!("{} {}  # {}\n", run.seed, run.profile, what.replace('\n', " "));
    let written = std::fs::OpenOptions::new().append(true).open(&path).and_then(|mut f| f.write_all(line.as_bytes()));
    match written {
        Ok(()) => println!("recorded in {}", path.display()),
        Err(e) => eprintln!("could not record the seed in {}: {e}", path.display()),
    }
}

fn main() -> ExitCode {
    let options = match parse() {
        Ok(options) => options,
        Err(message) if message.is_empty() => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("tenure-sim: {message}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let first = options.seed.unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        now.as_secs() * 1_000_000 + u64::from(now.subsec_micros())
    });
    if options.trace {
        return trace(first, &options);
    }
    let mut seeds = Vec::new();
    if options.regressions {
        match regressions() {
            Ok(known) => seeds.extend(known),
            Err(message) => {
                eprintln!("tenure-sim: {message}");
                return ExitCode::from(2);
            }
        }
    }
    let known = seeds.len();
    seeds.extend((0..options.seeds).map(|i| (first.wrapping_add(i), options.profile)));
    println!(
        "tenure-sim: profile {}, bugs {}, seeds {first}..={} (+{known} from regressions.txt), {} threads",
        options.profile,
        options.bugs,
        first.wrapping_add(options.seeds - 1),
        options.threads
    );
    let started = Instant::now();
    // Every 50th seed runs twice: the same seed must give the same trace.
    let runs = run_batch(&seeds, options.bugs, options.threads, |i| i % 50 == 0);
    let elapsed = started.elapsed().as_secs_f64();
    let mut coverage = Coverage::default();
    let mut events = 0;
    for run in &runs {
        if let Ok(outcome) = &run.result {
            coverage.add(&outcome.coverage);
            events += outcome.events;
        }
    }
    let replayed = runs.iter().enumerate().filter(|(i, r)| i % 50 == 0 && r.result.is_ok()).count();
    println!(
        "  {} seeds in {elapsed:.1} s: {:.1} seeds/s, {:.2} M events ({:.0} k events/s); {replayed} seeds replayed with identical traces",
        runs.len(),
        runs.len() as f64 / elapsed,
        events as f64 / 1e6,
        events as f64 / elapsed / 1e3,
    );
    println!("  coverage: {coverage}");
    if let Some(run) = runs.iter().find(|r| r.result.is_err()) {
        let Err(failure) = &run.result else { return ExitCode::FAILURE };
        println!(
            "FAIL seed {} (profile {}, bugs {}) at {:.3} ms: {}",
            run.seed,
            run.profile,
            options.bugs,
            failure.at as f64 / 1e6,
            failure.what
        );
        println!("replay: {}", replay_line(run.seed, run.profile, options.bugs));
        let fresh = runs.iter().position(|r| r.seed == run.seed).is_some_and(|i| i >= known);
        if options.record && options.bugs.is_empty() && fresh {
            record(run, &failure.what);
        }
        return ExitCode::FAILURE;
    }
    if runs.len() >= 100 {
        let zero: Vec<_> = required_coverage(options.profile, &coverage)
            .into_iter()
            .filter(|(_, n)| *n == 0)
            .map(|(name, _)| name)
            .collect();
        if !zero.is_empty() {
            println!("VACUOUS: never happened over the batch: {}", zero.join(", "));
            return ExitCode::from(3);
        }
    }
    println!("ok");
    ExitCode::SUCCESS
}

/// Prints every event of one seed, then its verdict.
fn trace(seed: u64, options: &Options) -> ExitCode {
    match run_guarded(seed, options.profile, options.bugs, true) {
        Ok(outcome) => {
            println!("seed {seed}: ok, {} events, trace {:016x}", outcome.events, outcome.trace);
            println!("coverage: {}", outcome.coverage);
            ExitCode::SUCCESS
        }
        Err(failure) => {
            println!("seed {seed}: FAIL at {:.3} ms: {}", failure.at as f64 / 1e6, failure.what);
            ExitCode::FAILURE
        }
    }
}
