//! `tenure-jepsen`: runs client processes of Tenure's front ends against a store it starts, while
//! a nemesis injects faults, records the history and judges it (see `docs/safety.md`).
//!
//!   tenure-jepsen run --store redis --nemesis pause --time 60 --out target/jepsen/redis-pause
//!   tenure-jepsen check target/jepsen/redis-pause      (judges a recorded history again)
//!   tenure-jepsen timeline target/jepsen/redis-pause 20 50 pause.svg   (a window of its timeline)
//!
//! Exit: 0 the history is valid (with `--expect KIND`: that anomaly was found), 1 it is not,
//! 2 the run could not be made.

// A program whose output is what it prints.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::{Args, Parser, Subcommand};
use tenure_jepsen::run::{self, Plan};

#[derive(Parser)]
#[command(name = "tenure-jepsen", about = "Histories of Tenure's clients against real stores under faults, judged")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One run: start the store, the clients and the nemesis; record; judge; report.
    Run(Box<RunArgs>),
    /// Judge the history recorded in DIR again.
    Check { dir: PathBuf },
    /// Print the table of docs/safety.md for the runs in DIRS.
    Table { dirs: Vec<PathBuf> },
    /// Write the timeline of the run in DIR from FROM to TO seconds into it to OUT (an SVG).
    Timeline { dir: PathBuf, from: f64, to: f64, out: PathBuf },
    /// (Run by `tenure lock` or `tenure elect` for a command-line client: the critical section
    /// of one turn; PRIMITIVE is 0 (a lock), a semaphore's permits, or `election`.)
    #[command(hide = true)]
    Section { address: String, process: u32, name: String, primitive: String },
}

#[derive(Args)]
struct RunArgs {
    /// sqlite, redis, sentinel, postgres or etcd.
    #[arg(long)]
    store: String,
    /// none, pause, clock, partition, kill, freeze, failover, lag (sentinel), leader, quorum,
    /// isolate, bridge (etcd).
    #[arg(long, default_value = "none")]
    nemesis: String,
    /// Seconds the clients run.
    #[arg(long, default_value_t = 30.0)]
    time: f64,
    /// The front ends of the clients, comma-separated: cli, python, node, jvm (jvm needs --kotlin-cp;
    /// scripts/jepsen.sh runs all four).
    #[arg(long, default_value = "cli,python,node", value_delimiter = ',')]
    fronts: Vec<String>,
    /// Clients per front end.
    #[arg(long, default_value_t = 1)]
    per_front: u32,
    /// The lease, in seconds.
    #[arg(long, default_value_t = 1.0)]
    lease: f64,
    /// Hold permits of a semaphore of N (instead of a lock).
    #[arg(long, conflicts_with = "election")]
    permits: Option<u32>,
    /// Run for leader of an election (instead of a lock): each term a turn, its writes under the
    /// term's fencing token.
    #[arg(long)]
    election: bool,
    /// (Redis, Sentinel) grants wait for N replicas (the store URL's `min_replicas=N`).
    #[arg(long)]
    min_replicas: Option<u32>,
    /// Where the history, the report and the timeline go.
    #[arg(long, default_value = "target/jepsen/run")]
    out: PathBuf,
    /// The fenced resource accepts every token (a broken build, to show what fencing prevents).
    #[arg(long)]
    unfenced: bool,
    /// Succeed only if this anomaly kind is found (checking that a broken build is caught).
    #[arg(long)]
    expect: Option<String>,
    /// Anomaly kinds the run may find and still succeed, comma-separated: what a store
    /// configured so may do, explained in docs/safety.md (a Sentinel failover without
    /// min_replicas may hand out a token again: stale-fence, duplicate-fence, shared-fence).
    #[arg(long, value_delimiter = ',')]
    allow: Vec<String>,
    /// The `tenure` command.
    #[arg(long, default_value = "target/debug/tenure")]
    tenure: PathBuf,
    /// A Python with the `tenure` package.
    #[arg(long, default_value = "python3")]
    python: PathBuf,
    /// The node_modules folder holding the npm package.
    #[arg(long)]
    node_path: Option<PathBuf>,
    /// The classpath of the JVM package and the harness's Kotlin client (scripts/test-kotlin.sh --build).
    #[arg(long)]
    kotlin_cp: Option<String>,
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::Run(args) => run_command(*args),
        Command::Check { dir } => run::check(&dir).map(|judged| {
            print!("{}", judged.report);
            judged.kinds.is_empty()
        }),
        Command::Table { dirs } => run::table(&dirs).map(|table| {
            print!("{table}");
            true
        }),
        Command::Timeline { dir, from, to, out } => run::window(&dir, from, to).and_then(|svg| {
            std::fs::write(&out, svg).map_err(|e| format!("{}: {e}", out.display()))?;
            Ok(true)
        }),
        Command::Section { address, process, name, primitive } => {
            section(&address, process, &name, &primitive).map(|()| true)
        }
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(problem) => {
            eprintln!("tenure-jepsen: {problem}");
            ExitCode::from(2)
        }
    }
}

fn run_command(args: RunArgs) -> Result<bool, String> {
    let absolute = |p: &Path| std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display()));
    let workers = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
    let plan = Plan {
        store: args.store,
        nemesis: args.nemesis,
        time: std::time::Duration::try_from_secs_f64(args.time).map_err(|e| format!("--time {}: {e}", args.time))?,
        fronts: args.fronts,
        per_front: args.per_front,
        lease: args.lease,
        out: absolute(&args.out)?,
        permits: args.permits,
        election: args.election,
        min_replicas: args.min_replicas,
        fenced: !args.unfenced,
        tenure: absolute(&args.tenure)?,
        harness: std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?,
        python: args.python,
        node_path: args.node_path.as_deref().map(absolute).transpose()?,
        kotlin_cp: args.kotlin_cp,
        workers,
    };
    println!("{} …", run::title(&plan));
    let judged = run::run(&plan, &Arc::new(AtomicBool::new(false)))?;
    print!("{}", judged.report.split_once('\n').map_or("", |(_, rest)| rest));
    println!("in {}", plan.out.display());
    let allowed = |kind: &String| args.allow.contains(kind) || args.expect.as_ref() == Some(kind);
    let unexplained: Vec<&String> = judged.kinds.iter().filter(|k| !allowed(k)).collect();
    if !unexplained.is_empty() {
        println!("not allowed: {}", unexplained.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", "));
    }
    Ok(match &args.expect {
        Some(kind) => judged.kinds.iter().any(|k| k == kind) && unexplained.is_empty(),
        None => unexplained.is_empty(),
    })
}

/// One command-line turn's critical section: says the fence `tenure lock` granted (or the term's
/// of `tenure elect`), reads the set, waits a little (so that a pause can fall between the read
/// and the write), writes it back; a semaphore's holder (`primitive` a number of permits above 0)
/// writes as it enters, waits, and writes as it leaves. A turn of `tenure elect` runs one section:
/// the command it runs again after a lost term finds the turn's marker and does nothing.
fn section(address: &str, process: u32, name: &str, primitive: &str) -> Result<(), String> {
    let permits = if primitive == "election" {
        let marker = std::env::var_os("TENURE_JEPSEN_TURN").ok_or("TENURE_JEPSEN_TURN is not set")?;
        if std::fs::File::create_new(&marker).is_err() {
            return Ok(());
        }
        0
    } else {
        primitive.parse::<u32>().map_err(|_| format!("no primitive {primitive:?} (0, permits, election)"))?
    };
    let fence = std::env::var("TENURE_FENCING_TOKEN").map_err(|_| "TENURE_FENCING_TOKEN is not set")?;
    let stream = std::net::TcpStream::connect(address).map_err(|e| format!("the harness at {address}: {e}"))?;
    let mut out = stream.try_clone().map_err(|e| e.to_string())?;
    let mut lines = BufReader::new(stream).lines();
    let mut say = |line: String| -> Result<String, String> {
        writeln!(out, "{line}").map_err(|e| e.to_string())?;
        let answer = lines.next().ok_or("the harness hung up")?.map_err(|e| e.to_string())?;
        if answer.starts_with("error") { Err(answer) } else { Ok(answer) }
    };
    say(format!("hello {process} {name} {}", std::process::id()))?;
    say(format!("ok {fence}"))?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let nap = || std::thread::sleep(std::time::Duration::from_millis(u64::from(nanos % 200)));
    if permits > 0 {
        say(format!("write {fence}"))?;
        nap();
        say(format!("write {fence}"))?;
    } else {
        let read = say(format!("read {fence}"))?;
        let values = read.strip_prefix("values").unwrap_or_default().trim();
        nap();
        say(format!("add {fence} {values}"))?;
    }
    say("invoke release".into())?;
    Ok(())
}
