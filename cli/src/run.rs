//! `tenure lock`, `tenure elect` and `tenure task`: a command run under a lease.

use std::time::Duration;

use tenure::{Error, KeepAlive, TaskLockConfig};
use tenure_tokio::{Coordination, Tokio};

use crate::child::{self, exit_code};
use crate::hold::{self, Ended, Lease, Timing};
use crate::store::{self, Store};
use crate::{EXIT_HELD, EXIT_LOST, EXIT_TIMEOUT, EXIT_USAGE, ElectArgs, Failure, LockArgs, TaskArgs, say};

/// The guard of a lock or a read-write lock's side: at once (`--no-wait`), within `--timeout`, or whenever it comes.
macro_rules! acquire {
    ($side:expr, $args:expr) => {{
        let side = $side;
        match ($args.no_wait, $args.timeout) {
            (true, _) => side.acquire_nowait().await,
            (false, Some(timeout)) => side.acquire_timeout(timeout).await,
            (false, None) => side.acquire().await,
        }
    }};
}

pub(crate) async fn coordination(backend: Option<&str>) -> Result<(Store, Coordination), Failure> {
    let store = store::open(backend).await?;
    let coordination = Coordination::new(Tokio::current()).source(&store);
    Ok((store, coordination))
}

pub(crate) fn usage(e: &tenure::Error) -> Failure {
    Failure::from_error(e)
}

/// The exit code of a held run, after saying how it ended.
fn finish(ended: &Ended) -> i32 {
    match ended {
        Ended::Exited(status) => exit_code(*status),
        Ended::Stopped { why, .. } => {
            say!("{why}");
            EXIT_LOST
        }
    }
}

pub(crate) async fn lock(backend: Option<&str>, args: LockArgs) -> Result<i32, Failure> {
    if args.shared || args.exclusive {
        return crate::rw::lock(backend, args).await;
    }
    if let Some(permits) = args.permits {
        return crate::sem::lock(backend, args, permits).await;
    }
    let (store, coordination) = coordination(backend).await?;
    let mut builder = coordination.lock(&args.name).map_err(|e| usage(&e))?;
    if let Some(lease) = args.lease {
        builder = builder.lease_duration(lease);
    }
    if let Some(purpose) = purpose_of(args.purpose.as_deref(), &args.command) {
        builder = builder.purpose(&purpose);
    }
    let lock = builder.env_load(false).build().map_err(|e| usage(&e))?;
    let timing = Timing::for_lease(lock.config().lease_duration());
    let guard = held(&store, &args, "lock", acquire!(lock, args)).await?;
    say!("acquired lock {} (fencing token {})", args.name, guard.fence());
    run_held(&store, guard, &args.name, &args.command, timing, args.on_lost.as_deref()).await
}

/// The purpose given (checked when the lock is built), or the name of the command run (its first
/// word's file name: never its arguments, which may hold a password).
pub(crate) fn purpose_of(given: Option<&str>, command: &[String]) -> Option<String> {
    if let Some(given) = given {
        return Some(given.to_owned());
    }
    let program = std::path::Path::new(command.first()?).file_name()?.to_string_lossy().into_owned();
    let program: String = program.chars().filter(|c| !c.is_control()).collect();
    let mut end = program.len().min(tenure::core::store::MAX_PURPOSE_BYTES);
    while !program.is_char_boundary(end) {
        end -= 1;
    }
    let program = program[..end].trim();
    (!program.is_empty()).then(|| program.to_owned())
}

/// The guard of `what` (`lock`, `read-write lock`, `semaphore`), or the failure a refused or timed-out
/// attempt exits with (the store closed).
pub(crate) async fn held<G>(
    store: &Store,
    args: &LockArgs,
    what: &str,
    acquired: Result<G, Error>,
) -> Result<G, Failure> {
    match acquired {
        Ok(guard) => Ok(guard),
        Err(e) if e.is_timeout() => {
            store::close(store).await;
            let waited = args.timeout.unwrap_or_default().as_secs_f64();
            Err(Failure::new(EXIT_TIMEOUT, format!("{what} {} not acquired within {waited}s", args.name)))
        }
        Err(e) if e.is_would_block() => {
            store::close(store).await;
            let taken = if what == "semaphore" { "has no free permit" } else { "is held by another holder" };
            Err(Failure::new(EXIT_HELD, format!("{what} {} {taken}", args.name)))
        }
        Err(e) => Err(usage(&e)),
    }
}

pub(crate) async fn task(backend: Option<&str>, args: TaskArgs) -> Result<i32, Failure> {
    let (store, coordination) = coordination(backend).await?;
    // The lease must cover the window: without --lease, a window longer than the default lease
    // gets a lease of its own length.
    let lease = args.lease.unwrap_or(TaskLockConfig::DEFAULT_LEASE_DURATION.max(args.min_hold));
    if lease < args.min_hold {
        let (window, lease) = (args.min_hold.as_secs_f64(), lease.as_secs_f64());
        return Err(Failure::new(EXIT_USAGE, format!("--min-hold ({window}s) must be at most --lease ({lease}s)")));
    }
    let mut builder = coordination.task_lock(&args.name).map_err(|e| usage(&e))?.min_hold_duration(args.min_hold);
    if let Some(purpose) = purpose_of(args.purpose.as_deref(), &args.command) {
        builder = builder.purpose(&purpose);
    }
    let task = builder.lease_duration(lease).env_load(false).build().map_err(|e| usage(&e))?;
    let timing = Timing::for_lease(task.config().lease_duration());
    let guard = match task.enter().await {
        Ok(guard) => guard,
        Err(e) if e.is_would_block() => {
            say!("skipped task {}: it ran within the last {}s", args.name, args.min_hold.as_secs_f64());
            store::close(&store).await;
            return Ok(0);
        }
        Err(e) => return Err(usage(&e)),
    };
    say!("running task {} (fencing token {})", args.name, guard.fence());
    run_held(&store, guard, &args.name, &args.command, timing, None).await
}

/// Runs `command` under `lease` (with `TENURE_LOCK_NAME` and `TENURE_FENCING_TOKEN`), keeps the
/// lease alive while it runs (the library renews it; see `hold`), ends the lease when it exits,
/// and closes the store.
pub(crate) async fn run_held<G: Lease>(
    store: &Store,
    lease: G,
    name: &str,
    command: &[String],
    timing: Timing,
    on_lost: Option<&str>,
) -> Result<i32, Failure> {
    let mut env = vec![("TENURE_LOCK_NAME", name.to_owned())];
    env.extend(lease.variables());
    // No maximum hold: the command decides how long it runs.
    let kept = KeepAlive::new(lease, Duration::MAX);
    let mut running = match child::start(command, &env) {
        Ok(running) => running,
        Err(failure) => {
            let _ = kept.stop().end().await;
            store::close(store).await;
            return Err(failure);
        }
    };
    let ended = hold::keep(&kept, &mut running, timing).await;
    let lease = kept.stop();
    if let Ok(Ended::Exited(_)) = ended
        && let Err(e) = lease.end().await
    {
        say!("ending the lease of {name} failed: {e}");
    }
    store::close(store).await;
    let ended = ended?;
    let code = finish(&ended);
    if let (Ended::Stopped { why, cause }, Some(on_lost)) = (&ended, on_lost) {
        env.extend([("TENURE_LOST_CAUSE", (*cause).to_owned()), ("TENURE_LOST_REASON", why.clone())]);
        child::on_lost(on_lost, &env).await;
    }
    Ok(code)
}

pub(crate) async fn elect(backend: Option<&str>, args: ElectArgs) -> Result<i32, Failure> {
    let (store, coordination) = coordination(backend).await?;
    let mut builder = coordination.leader_election(&args.name).map_err(|e| usage(&e))?;
    if let Some(lease) = args.lease {
        builder = builder.lease_duration(lease);
    }
    if let Some(deadline) = args.renew_deadline {
        // Each store call must fit inside the renew deadline: bound it by half of it.
        let bound = tenure::LeaderElectionConfig::DEFAULT_BACKEND_TIMEOUT.min(deadline / 2);
        builder = builder.renew_deadline(deadline).backend_timeout(bound);
    }
    if let Some(retry) = args.retry_interval {
        builder = builder.retry_interval(retry);
    }
    if let Some(purpose) = purpose_of(args.purpose.as_deref(), &args.command) {
        builder = builder.purpose(&purpose);
    }
    let election = builder.env_load(false).build().map_err(|e| usage(&e))?;
    let config = election.config();
    // Leadership ends locally at the renew deadline; the lease lasts until lease_duration. The
    // command gets half of that gap to stop before KILL, so it is gone before a successor leads.
    let grace = config.lease_duration().saturating_sub(config.renew_deadline()) / 2;
    election.start();
    let mut interrupts = hold::signals()?;
    let code = loop {
        tokio::select! {
            () = election.wait_for_leader() => {}
            Some(signal) = interrupts.next() => {
                say!("stopping on {signal} before leading");
                break 128 + signal as i32;
            }
        }
        say!("leading election {}", args.name);
        // (the term's fence, where the store keeps one: the command writes with it)
        let mut env = vec![("TENURE_LEADER_NAME", args.name.clone())];
        env.extend(election.fence().map(|fence| ("TENURE_FENCING_TOKEN", fence.to_string())));
        let mut running = match child::start(&args.command, &env) {
            Ok(running) => running,
            Err(failure) => {
                election.stop().await;
                store::close(&store).await;
                return Err(failure);
            }
        };
        let lost = loop {
            tokio::select! {
                status = running.wait() => break Ok(status?),
                () = election.wait_lose_leader() => break Err(()),
                Some(signal) = interrupts.next() => {
                    say!("passing {signal} on to the command");
                    running.signal(signal);
                }
            }
        };
        match lost {
            Ok(status) => break exit_code(status),
            Err(()) => {
                let status = running.stop(grace.max(Duration::from_millis(10))).await?;
                say!("lost leadership of {}; the command was stopped (exit {})", args.name, exit_code(status));
            }
        }
    };
    election.stop().await;
    store::close(&store).await;
    Ok(code)
}
