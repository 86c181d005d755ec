//! The client processes of a run, each through one of Tenure's real front ends, all taking one
//! lock in turn: the `tenure` command (one `tenure lock NAME -- tenure-jepsen section ...` per
//! turn), and long-lived workers of the Python, npm and JVM packages (`clients/worker.py`,
//! `clients/worker.cjs`, `clients/worker.kt`). Each reports its operations to the harness (`serve`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::history::{F, Kind};
use crate::partition::Cut;
use crate::record::Recorder;

/// The front ends a client can use.
pub(crate) const FRONTS: &[&str] = &["cli", "python", "node", "jvm"];

/// What every client of a run shares.
#[derive(Clone)]
pub(crate) struct Setup {
    pub(crate) url: String,
    pub(crate) name: String,
    /// The harness's address (`serve`).
    pub(crate) address: String,
    /// The lease, in seconds.
    pub(crate) lease: f64,
    /// How long an acquire waits, in seconds.
    pub(crate) timeout: f64,
    /// The `tenure` command.
    pub(crate) tenure: PathBuf,
    /// This program (its `section` runs under `tenure lock`).
    pub(crate) harness: PathBuf,
    /// The Python interpreter with the `tenure` package.
    pub(crate) python: PathBuf,
    /// The `node_modules` folder holding the npm package.
    pub(crate) node_path: Option<PathBuf>,
    /// The classpath of the JVM package and `clients/worker.kt` (scripts/test-kotlin.sh --build).
    pub(crate) kotlin_cp: Option<String>,
    /// The folder of `worker.py` and `worker.cjs`.
    pub(crate) workers: PathBuf,
    /// Where each client's faked clock offset is written (`clock-N`), when clocks are faked.
    pub(crate) clocks: Option<PathBuf>,
    /// Where client processes' standard error goes (`client-N.log`).
    pub(crate) logs: PathBuf,
    /// The cgroups clients run in, when the nemesis cuts them from the store.
    pub(crate) cut: Option<Arc<Cut>>,
    /// The permits of the semaphore the clients hold (none: they take a lock).
    pub(crate) permits: Option<u32>,
    /// The clients run for leader of an election instead (each term a turn).
    pub(crate) election: bool,
}

impl Setup {
    /// What the clients hold, as their last argument says it: `election`, a semaphore's permits,
    /// or 0 (a lock).
    fn primitive(&self) -> String {
        if self.election { "election".to_owned() } else { self.permits.unwrap_or(0).to_string() }
    }
}

/// libfaketime from Debian's `faketime` package.
pub(crate) const FAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// Runs client `index` through `front` until `stop` is set, as process `index + 1` (a worker that
/// died and was started again as `+ 100`). A process goes on after an operation of unknown
/// outcome: the checkers let such an operation take effect at any time after it was invoked.
pub(crate) fn drive(front: &str, index: u32, setup: &Setup, recorder: &Recorder, stop: &AtomicBool) {
    let mut process = index + 1;
    let mut turn = 0;
    while !stop.load(Ordering::SeqCst) {
        turn += 1;
        // A command-line turn's acquire begins when the command starts; a worker says it itself.
        if front == "cli"
            && let Err(problem) = recorder.invoke(process, F::Acquire, &setup.name)
        {
            recorder.problem(problem);
            return;
        }
        let marker = setup.logs.join(format!("turn-{index}-{turn}"));
        let (child, cli) = match spawn(front, index, process, setup, &marker) {
            Ok(child) => child,
            Err(e) => {
                recorder.problem(format!("client {index} ({front}) cannot start: {e}"));
                return;
            }
        };
        let pid = i32::try_from(child.id()).unwrap_or_default();
        // `tenure elect` waits to lead for as long as it takes: the turn ends it (SIGTERM) after
        // the timeout the other clients wait.
        let patience = (cli && setup.election).then(|| Duration::from_secs_f64(setup.timeout));
        let (status, terminated) = watch(child, pid, cli, process, recorder, stop, patience);
        // A command the turn's SIGTERM reached before it had set up its handling (still
        // starting: no lease yet) dies of the signal; a shell reads that as 143, as the command
        // says it itself once it handles the signal.
        let killed_by_term = terminated && status.is_some_and(|s| signal_of(s) == Some(15));
        let code = status.and_then(|s| s.code()).or(killed_by_term.then_some(143));
        let exit = exit_text(status);
        let _ = std::fs::remove_file(&marker);
        note(setup, index, &format!("tenure-jepsen: process {process} (pid {pid}) exited with {exit}"));
        if !recorder.settled(process, Duration::from_secs(10)) {
            recorder.problem(format!("client {index} ({front}) exited, and its connection stayed open"));
        }
        let open = recorder.open(process);
        let (kind, f) = ended(cli, code, open);
        if let Some(f) = f {
            if open.is_none() {
                let _ = recorder.invoke(process, f, &setup.name);
            }
            if let Err(problem) = recorder.complete(process, kind, None) {
                recorder.problem(problem);
            }
        }
        recorder.unregister(process);
        // The command's own exit codes, 1 (the store failed) and 143 (ended waiting to lead);
        // anything else is a crash.
        if cli && !matches!(code, Some(0 | 1 | 70 | 75 | 124 | 143)) {
            recorder.problem(format!("client {index} (cli) exited with {exit}; see client-{index}.log"));
        }
        if !cli && !stop.load(Ordering::SeqCst) {
            recorder.problem(format!("client {index} ({front}) exited with {exit}; see client-{index}.log"));
            process += 100;
            std::thread::sleep(Duration::from_millis(500));
        } else if kind == Kind::Info {
            // The store failed: the next turn waits a little, as the workers do.
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn log_of(setup: &Setup, index: u32) -> PathBuf {
    setup.logs.join(format!("client-{index}.log"))
}

/// Adds a line to client `index`'s log.
fn note(setup: &Setup, index: u32, line: &str) {
    use std::io::Write as _;
    let log = std::fs::File::options().create(true).append(true).open(log_of(setup, index));
    if let Ok(mut log) = log {
        let _ = writeln!(log, "{line}");
    }
}

/// The signal that ended a process, if one did.
fn signal_of(status: std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt as _;
    status.signal()
}

/// Waits for a client to exit, ending a long-lived worker once the run is over, and a command
/// still waiting to acquire after `patience` (SIGTERM); its status, and whether SIGTERM was sent.
fn watch(
    mut child: Child,
    pid: i32,
    cli: bool,
    process: u32,
    recorder: &Recorder,
    stop: &AtomicBool,
    patience: Option<Duration>,
) -> (Option<std::process::ExitStatus>, bool) {
    if cli {
        recorder.register(process, pid);
    }
    let started = std::time::Instant::now();
    let mut ended = false;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return (Some(status), ended);
        }
        // (A turn that lost its term waits to lead again: the run's end ends it too.)
        let waited = patience.is_some_and(|p| started.elapsed() > p) && recorder.open(process) == Some(F::Acquire);
        if !ended && patience.is_some() && (waited || stop.load(Ordering::SeqCst)) {
            crate::record::signal(&[pid], nix::sys::signal::Signal::SIGTERM);
            ended = true;
        }
        if !cli && stop.load(Ordering::SeqCst) {
            let _ = child.kill();
            return (child.wait().ok(), ended);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An exit status in words: `code N`, or the signal that ended the process (`signal 9`).
fn exit_text(status: Option<std::process::ExitStatus>) -> String {
    match (status.and_then(|s| s.code()), status.and_then(signal_of)) {
        (Some(code), _) => format!("code {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "an unknown status".into(),
    }
}

/// How a client's open operation ends when its OS process exits with `code` (a command-line
/// client's exit codes: 0 its command's, 75 held, 124 timed out, 70 the lease was lost), and
/// which one it is if the section never said (a release the `tenure` command made on its own).
/// A command-line release is of unknown outcome: the command's 0 says nothing of it.
fn ended(cli: bool, code: Option<i32>, open: Option<F>) -> (Kind, Option<F>) {
    match (cli, open, code) {
        (true, Some(F::Acquire), Some(75 | 124 | 143)) => (Kind::Fail, Some(F::Acquire)),
        // `tenure lock` exits with its command's code even if ending the lease then failed.
        (true, Some(F::Release), Some(0)) => (Kind::Info, Some(F::Release)),
        (true, Some(F::Release) | None, Some(70)) => (Kind::Fail, Some(F::Release)),
        (true, None, _) => (Kind::Info, Some(F::Release)),
        (_, Some(f), _) => (Kind::Info, Some(f)),
        (false, None, _) => (Kind::Info, None),
    }
}

/// Starts one OS process of client `index` as `process`; whether it is a command-line turn. A
/// command-line election's turn is marked done by the file `marker` (`tenure elect` runs its
/// command again each time it leads: only the first run of a turn is a section).
fn spawn(
    front: &str,
    index: u32,
    process: u32,
    setup: &Setup,
    marker: &std::path::Path,
) -> std::io::Result<(Child, bool)> {
    let lease = setup.lease.to_string();
    let primitive = setup.primitive();
    let (mut command, cli) = match front {
        "cli" if setup.election => {
            let mut command = Command::new(&setup.tenure);
            command.arg("--backend").arg(&setup.url).args(["elect", &setup.name, "--lease", &lease]);
            command.args(["--renew-deadline", &(0.6 * setup.lease).to_string()]);
            command.args(["--retry-interval", &(0.1 * setup.lease).to_string()]);
            command.arg("--").arg(&setup.harness);
            command.args(["section", &setup.address, &process.to_string(), &setup.name, &primitive]);
            command.env("TENURE_JEPSEN_TURN", marker);
            (command, true)
        }
        "cli" => {
            let mut command = Command::new(&setup.tenure);
            command.arg("--backend").arg(&setup.url).args(["lock", &setup.name]);
            command.args(["--timeout", &setup.timeout.to_string(), "--lease", &lease]);
            if let Some(permits) = setup.permits {
                command.args(["--permits", &permits.to_string()]);
            }
            command.arg("--").arg(&setup.harness);
            command.args(["section", &setup.address, &process.to_string(), &setup.name, &primitive]);
            (command, true)
        }
        "python" => {
            let mut command = Command::new(&setup.python);
            command.arg(setup.workers.join("worker.py"));
            (command, false)
        }
        "node" => {
            let mut command = Command::new("node");
            command.arg(setup.workers.join("worker.cjs"));
            if let Some(path) = &setup.node_path {
                command.env("NODE_PATH", path);
            }
            (command, false)
        }
        "jvm" => {
            let cp = setup.kotlin_cp.as_deref().ok_or_else(|| {
                std::io::Error::other("the jvm front end needs the package's classpath (--kotlin-cp, TENURE_KOTLIN_CP)")
            })?;
            let mut command = Command::new("java");
            command.args(["-cp", cp, "tenure.jepsen.WorkerKt"]);
            (command, false)
        }
        other => {
            return Err(std::io::Error::other(format!("no front end {other:?} (they are: {})", FRONTS.join(", "))));
        }
    };
    if !cli {
        command.args([&setup.url, &setup.name, &setup.address, &process.to_string(), &lease]);
        command.arg(setup.timeout.to_string()).arg(&primitive);
    }
    if let Some(clocks) = &setup.clocks {
        let file = clocks.join(format!("clock-{index}"));
        if !file.exists() {
            std::fs::write(&file, "+0\n")?;
        }
        command.env("LD_PRELOAD", FAKETIME).env("FAKETIME_TIMESTAMP_FILE", file);
        command.env("FAKETIME_CACHE_DURATION", "1");
    }
    if let Some(cut) = &setup.cut {
        command = crate::partition::in_cgroup(&command, &cut.procs(index as usize));
    }
    let log = std::fs::File::options().create(true).append(true).open(log_of(setup, index))?;
    let child = command.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).spawn()?;
    Ok((child, cli))
}

/// Starts every client (`fronts`, each `per_front` times) on threads; they run until `stop`.
pub(crate) fn start(
    fronts: &[String],
    per_front: u32,
    setup: &Setup,
    recorder: &Arc<Recorder>,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut threads = Vec::new();
    let mut index = 0;
    for front in fronts {
        for _ in 0..per_front {
            let (front, setup, recorder, stop) = (front.clone(), setup.clone(), recorder.clone(), stop.clone());
            let i = index;
            threads.push(std::thread::spawn(move || drive(&front, i, &setup, &recorder, &stop)));
            index += 1;
        }
    }
    threads
}
