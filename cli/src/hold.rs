//! Keeping a lease while a command runs: renew it every third of the lease; if renewals keep
//! failing, stop the command (TERM, then KILL) before the lease can lapse; if the lease is lost,
//! stop it at once. Signals sent to tenure are passed on to the command.

use std::future::Future;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;
use tenure::Error;
use tenure_tokio::{LockGuard, TaskLockGuard};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::{Instant, sleep_until};

use crate::child::Running;
use crate::{Failure, say};

/// A lease the command runs under.
pub(crate) trait Lease {
    /// The fencing token of the lease.
    fn fence(&self) -> u64;
    /// Renews it for another lease.
    fn renew(&mut self) -> impl Future<Output = Result<(), Error>> + Send;
    /// Completes when it is lost.
    fn lost(&self) -> impl Future<Output = ()> + Send + 'static;
    /// Ends it when the command is done: a lock is released; a task lock keeps its claim for
    /// what is left of the min-hold window.
    fn end(self) -> impl Future<Output = Result<(), Error>> + Send;
}

impl Lease for LockGuard {
    fn fence(&self) -> u64 {
        self.fencing_token().get()
    }

    async fn renew(&mut self) -> Result<(), Error> {
        self.extend().await.map(drop)
    }

    fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        LockGuard::lost(self)
    }

    fn end(self) -> impl Future<Output = Result<(), Error>> + Send {
        self.release()
    }
}

impl Lease for TaskLockGuard {
    fn fence(&self) -> u64 {
        self.fencing_token().get()
    }

    async fn renew(&mut self) -> Result<(), Error> {
        self.extend().await
    }

    fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        TaskLockGuard::lost(self)
    }

    fn end(self) -> impl Future<Output = Result<(), Error>> + Send {
        self.exit()
    }
}

/// How a held run ended.
pub(crate) enum Ended {
    /// The command exited on its own.
    Exited(ExitStatus),
    /// The lease was lost or could not be kept; the command was stopped.
    Stopped(String),
}

/// The timing of a lease kept for a command.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    /// The lease.
    pub(crate) lease: Duration,
    /// Time between TERM and KILL.
    pub(crate) grace: Duration,
    /// KILL lands at least this long before the lease's end.
    pub(crate) margin: Duration,
}

impl Timing {
    pub(crate) fn for_lease(lease: Duration) -> Self {
        Self { lease, grace: (lease / 4).min(Duration::from_secs(10)), margin: lease / 20 }
    }

    /// The last instant the lease may be counted on, for a request sent at `sent`: the lease
    /// less the 1 % clock-drift allowance the core uses.
    fn valid_until(&self, sent: Instant) -> Instant {
        sent + self.lease - self.lease / 100
    }
}

/// Runs until the command exits, renewing `lease`; `acquired` is an instant before the request
/// that last granted or renewed the lease was sent.
pub(crate) async fn keep(
    lease: &mut impl Lease,
    command: &mut Running,
    timing: Timing,
    acquired: Instant,
) -> Result<Ended, Failure> {
    let mut interrupts = signals()?;
    let lost = lease.lost();
    tokio::pin!(lost);
    let mut valid_until = timing.valid_until(acquired);
    let mut next_renewal = acquired + timing.lease / 3;
    loop {
        // TERM early enough that KILL, `grace` later, still lands `margin` before the end.
        let stop_at = valid_until.checked_sub(timing.grace + timing.margin).unwrap_or_else(Instant::now);
        tokio::select! {
            status = command.wait() => return Ok(Ended::Exited(status?)),
            () = &mut lost => {
                let status = command.stop(timing.grace).await?;
                return Ok(stopped("the lease was lost", status));
            }
            () = sleep_until(stop_at) => {
                let kill_by = valid_until.checked_sub(timing.margin).unwrap_or_else(Instant::now);
                let grace = kill_by.saturating_duration_since(Instant::now());
                let status = command.stop(grace).await?;
                return Ok(stopped("the lease could not be renewed in time", status));
            }
            () = sleep_until(next_renewal) => {
                let sent = Instant::now();
                match lease.renew().await {
                    Ok(()) => {
                        valid_until = timing.valid_until(sent);
                        next_renewal = sent + timing.lease / 3;
                    }
                    Err(e) if e.is_not_owned() || e.is_would_block() => {
                        let status = command.stop(timing.grace).await?;
                        return Ok(stopped(&format!("the lease was lost ({e})"), status));
                    }
                    Err(e) => {
                        say!("renewing the lease failed, retrying: {e}");
                        next_renewal = Instant::now() + (timing.lease / 10).min(Duration::from_secs(1));
                    }
                }
            }
            Some(signal) = interrupts.next() => {
                say!("passing {signal} on to the command");
                command.signal(signal);
            }
        }
    }
}

fn stopped(why: &str, status: ExitStatus) -> Ended {
    Ended::Stopped(format!("{why}; the command was stopped (exit {})", crate::child::exit_code(status)))
}

/// SIGINT, SIGTERM and SIGHUP sent to tenure, to pass on.
pub(crate) struct Interrupts {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

pub(crate) fn signals() -> Result<Interrupts, Failure> {
    let listen = |kind| signal(kind).map_err(|e| Failure::new(1, format!("cannot listen for signals: {e}")));
    Ok(Interrupts {
        int: listen(SignalKind::interrupt())?,
        term: listen(SignalKind::terminate())?,
        hup: listen(SignalKind::hangup())?,
    })
}

impl Interrupts {
    pub(crate) async fn next(&mut self) -> Option<Signal> {
        tokio::select! {
            s = self.int.recv() => s.map(|()| Signal::SIGINT),
            s = self.term.recv() => s.map(|()| Signal::SIGTERM),
            s = self.hup.recv() => s.map(|()| Signal::SIGHUP),
        }
    }
}
