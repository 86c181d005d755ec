//! `tenure`: run a command while holding a distributed lock, while leading an election, or at
//! most once per window across every replica; show what a store holds; and a demo.
//!
//! Exit codes: the command's own (128 + N when signal N ended it); 2 bad usage, URL or duration;
//! 75 `--no-wait` found the lock held; 124 `--timeout` passed; 70 the lease was lost while the
//! command ran (the command was stopped); 1 the store failed; 126/127 the command could not run;
//! 3 `tenure revoke` found nothing to revoke.

mod child;
mod demo;
mod exporter;
mod hold;
mod listing;
mod locks;
mod revoke;
#[macro_use]
mod run;
mod rw;
mod sem;
mod status;
mod store;
mod watch;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// Exit code: `--no-wait` found the lock held (EX_TEMPFAIL).
pub(crate) const EXIT_HELD: i32 = 75;
/// Exit code: `--timeout` passed before the lock was acquired (as timeout(1)).
pub(crate) const EXIT_TIMEOUT: i32 = 124;
/// Exit code: the lease was lost while the command ran; the command was stopped (EX_SOFTWARE).
pub(crate) const EXIT_LOST: i32 = 70;
/// Exit code: bad usage.
pub(crate) const EXIT_USAGE: i32 = 2;

#[derive(Parser, Debug)]
#[command(name = "tenure", version, about = "Distributed locks with fencing tokens, task locks and leader election")]
#[command(after_help = "Stores: sqlite:///path/to/file.db (the default is a file in $XDG_STATE_HOME/tenure), \
redis://[user:password@]host:6379/0 or rediss:// (TLS; ?prefix=app: to share a server), redis+unix:///path.sock, \
redis+cluster://h1:6379,h2:6379, redis+sentinel://h1:26379,h2:26379/MASTER[/DB] or rediss+sentinel:// \
(valkey… alike), postgresql://user:password@host:5432/db (?sslmode=verify-full for checked TLS), \
etcd://host:2379[,host:2379…] or etcds:// (TLS; ?prefix=app/), memory: (this process only). \
Or set TENURE_BACKEND.\n\nExit codes: the command's own; 2 bad usage; \
75 --no-wait found the lock held; 124 --timeout passed; 70 the lease was lost and the command stopped; \
1 the store failed; 126/127 the command could not run; 3 tenure revoke found the name free.")]
struct Cli {
    /// The store: sqlite:///path/to/file.db, redis://host:6379/0 (also rediss://,
    /// redis+cluster://, redis+sentinel://host:26379/MASTER), postgresql://user@host/db,
    /// etcd://host:2379 or memory:
    /// (default: $TENURE_BACKEND, else a SQLite file in the user's state directory).
    #[arg(long, global = true, value_name = "URL")]
    backend: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run CMD while holding the lock NAME, extending its lease while CMD runs.
    ///
    /// CMD gets TENURE_LOCK_NAME and TENURE_FENCING_TOKEN. If the lease cannot be kept, CMD is
    /// stopped (TERM, then KILL) before it can lapse.
    Lock(LockArgs),
    /// Run CMD only while this process leads the election NAME; stop it when leadership is lost.
    Elect(ElectArgs),
    /// Run CMD at most once per --min-hold window across every process, or say it was skipped.
    Task(TaskArgs),
    /// Show the holders, fencing tokens and leader records in the store.
    Status(StatusArgs),
    /// List every lock, task lock, read-write lock, semaphore and election under PREFIX: holders
    /// (workers, never tokens), fence, lease left and waiters.
    Locks(locks::LocksArgs),
    /// Take the lock NAME away from its holder: its fence advances (a resource checking fences
    /// refuses the holder's writes), its next renewal fails with the cause "revoked", and the lock
    /// is free again when the revoked lease would have ended. Exit 3 if nobody held it.
    Revoke(revoke::RevokeArgs),
    /// A live view of every lock, read-write lock, semaphore and election under PREFIX, and what
    /// happens to them (granted, handed over, released, expired, revoked, elected); Ctrl-C leaves.
    Watch(watch::WatchArgs),
    /// Serve what the store holds to Prometheus: every lock, task lock, read-write lock,
    /// semaphore and election (held, holders, waiters, fence, lease left, leader and term).
    Exporter(exporter::ExporterArgs),
    /// Start worker processes on the store and print a timeline: mutual exclusion, increasing
    /// fencing tokens and a leader failover.
    Demo(DemoArgs),
    /// One worker of `tenure demo` (started by it).
    #[command(hide = true)]
    DemoWorker(demo::WorkerArgs),
}

#[derive(Args, Debug)]
pub(crate) struct LockArgs {
    /// The lock name.
    pub(crate) name: String,
    /// Give up after this many seconds of waiting (exit 124).
    #[arg(long, value_name = "S", value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) timeout: Option<Duration>,
    /// The lease, in seconds (default 60): how long the lock outlives this process if it dies.
    #[arg(long, value_name = "S", value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) lease: Option<Duration>,
    /// Fail at once if the lock is held (exit 75).
    #[arg(long)]
    pub(crate) no_wait: bool,
    /// Hold NAME's read-write lock as one of its readers: any number of --shared holders run at
    /// once, never beside an --exclusive one (CMD gets TENURE_GENERATION, the fencing token of
    /// the last write). A read-write lock is not the plain lock NAME (grelmicro's rwlock: and
    /// lock: names).
    #[arg(long, conflicts_with = "exclusive")]
    pub(crate) shared: bool,
    /// Hold NAME's read-write lock as its writer: alone, no reader beside it; while it waits, new
    /// readers wait behind it (CMD gets TENURE_FENCING_TOKEN, and TENURE_POISONED=1 if the
    /// writer before it lost its lease without releasing).
    #[arg(long)]
    pub(crate) exclusive: bool,
    /// Hold one of N permits of the semaphore NAME: up to N holders run at once, each with a
    /// fencing token of its own (CMD gets TENURE_FENCING_TOKEN, greater than every earlier
    /// permit's); waiters are served in arrival order. Every holder of NAME must ask for the same
    /// N (another N is refused while NAME is in use). A semaphore is not the lock NAME.
    #[arg(long, value_name = "N", conflicts_with_all = ["shared", "exclusive"])]
    pub(crate) permits: Option<u32>,
    /// When the lease is lost (the command then stopped), run this shell command, with
    /// TENURE_LOCK_NAME, TENURE_FENCING_TOKEN, TENURE_LOST_CAUSE (expired, unreachable, taken, fence_regression or revoked)
    /// and TENURE_LOST_REASON in its environment; tenure still exits 70.
    #[arg(long, value_name = "SHELL")]
    pub(crate) on_lost: Option<String>,
    /// What the lock, the read-write lock's side or the permit is held for, shown with this
    /// holder's host, pid and program by `tenure locks` (default: the command's name, never its
    /// arguments).
    #[arg(long, value_name = "TEXT")]
    pub(crate) purpose: Option<String>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

#[derive(Args, Debug)]
pub(crate) struct ElectArgs {
    /// The election name.
    pub(crate) name: String,
    /// The leader's lease, in seconds (default 15).
    #[arg(long, value_name = "S", value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) lease: Option<Duration>,
    /// How long a leader may go without a renewal before it steps down, in seconds (default 10;
    /// below --lease).
    #[arg(long, value_name = "S", value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) renew_deadline: Option<Duration>,
    /// Seconds between attempts and renewals (default 2).
    #[arg(long, value_name = "S", value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) retry_interval: Option<Duration>,
    /// What this worker leads for, shown with its host, pid and program by `tenure locks` while
    /// it leads (default: the command's name, never its arguments).
    #[arg(long, value_name = "TEXT")]
    pub(crate) purpose: Option<String>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

#[derive(Args, Debug)]
pub(crate) struct TaskArgs {
    /// The task name.
    pub(crate) name: String,
    /// The window, in seconds: CMD starts at most once per window across every process.
    #[arg(long, value_name = "S", value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) min_hold: Duration,
    /// The lease while CMD runs, in seconds (default 60, or the window if it is longer).
    #[arg(long, value_name = "S", value_parser = seconds, allow_negative_numbers = true)]
    pub(crate) lease: Option<Duration>,
    /// What the task is, shown with each run's host, pid and program by `tenure locks`
    /// (default: the command's name, never its arguments).
    #[arg(long, value_name = "TEXT")]
    pub(crate) purpose: Option<String>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

#[derive(Args, Debug)]
pub(crate) struct StatusArgs {
    /// Names to show (each as a lock, a task lock and an election); all when none are given.
    pub(crate) names: Vec<String>,
    /// One JSON document on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct DemoArgs {
    /// How many worker processes.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=16))]
    pub(crate) workers: u8,
}

/// Reads a number of seconds: whole or fractional, positive and finite.
fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number of seconds"))?;
    tenure::core::time::seconds("duration", secs).map_err(|e| {
        let message = e.to_string();
        message.strip_prefix("duration: ").unwrap_or(&message).to_owned()
    })
}

/// A way a command ends other than with the command's own status.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: i32,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(code: i32, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(EXIT_USAGE, message)
    }

    pub(crate) fn store(message: impl Into<String>) -> Self {
        Self::new(1, message)
    }

    /// An error of the library: settings are usage errors, the rest store failures.
    pub(crate) fn from_error(error: &tenure::Error) -> Self {
        if error.is_settings() { Self::usage(error.to_string()) } else { Self::store(error.to_string()) }
    }
}

/// Progress and errors for people, on stderr.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        #[allow(clippy::print_stderr)]
        {
            eprintln!("tenure: {}", format_args!($($arg)*));
        }
    }};
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            say!("cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(dispatch(cli)).unwrap_or_else(|failure| {
        say!("{}", failure.message);
        failure.code
    });
    ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}

async fn dispatch(cli: Cli) -> Result<i32, Failure> {
    let backend = cli.backend.as_deref();
    match cli.command {
        Command::Lock(args) => run::lock(backend, args).await,
        Command::Elect(args) => run::elect(backend, args).await,
        Command::Task(args) => run::task(backend, args).await,
        Command::Status(args) => status::run(backend, args).await,
        Command::Exporter(args) => exporter::run(backend, args).await,
        Command::Locks(args) => locks::run(backend, args).await,
        Command::Watch(args) => watch::run(backend, args).await,
        Command::Revoke(args) => revoke::run(backend, args).await,
        Command::Demo(args) => demo::run(backend, args).await,
        Command::DemoWorker(args) => demo::worker(backend, args).await,
    }
}
