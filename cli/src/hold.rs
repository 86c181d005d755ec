//! A command run under a lease the library keeps alive (`KeepAlive`): this adds only the
//! command's side — TERM, then KILL, timed so that KILL lands before the lease could lapse when
//! renewals stop getting through; at once when the lease is lost — and passes signals sent to
//! tenure on to the command.

use std::future::Future;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;
use tenure::{Error, KeepAlive, KeepAliveEnd, Keepable, Timestamp};
use tenure_tokio::{LockGuard, ReadGuard, TaskLockGuard, WriteGuard};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::{Instant, sleep_until};

use crate::Failure;
use crate::child::Running;
use crate::say;

/// A lease a command runs under.
pub(crate) trait Lease: Keepable {
    /// Its fencing token.
    fn fence(&self) -> u64;
    /// What the command is told of it besides the name.
    fn variables(&self) -> Vec<(&'static str, String)> {
        vec![("TENURE_FENCING_TOKEN", self.fence().to_string())]
    }
    /// Ends it when the command is done: a lock is released; a task lock keeps its claim for
    /// what is left of the min-hold window.
    fn end(self) -> impl Future<Output = Result<(), Error>> + Send;
}

impl Lease for LockGuard {
    fn fence(&self) -> u64 {
        self.fencing_token().get()
    }

    fn end(self) -> impl Future<Output = Result<(), Error>> + Send {
        self.release()
    }
}

/// A reader's "fence" is the generation it reads (the fencing token of the last write).
impl Lease for ReadGuard {
    fn fence(&self) -> u64 {
        self.generation().get()
    }

    fn variables(&self) -> Vec<(&'static str, String)> {
        vec![("TENURE_GENERATION", self.fence().to_string())]
    }

    fn end(self) -> impl Future<Output = Result<(), Error>> + Send {
        self.release()
    }
}

impl Lease for WriteGuard {
    fn fence(&self) -> u64 {
        self.fencing_token().get()
    }

    fn variables(&self) -> Vec<(&'static str, String)> {
        let fence = self.fence().to_string();
        let poisoned = if self.poisoned() { "1" } else { "0" };
        vec![
            ("TENURE_FENCING_TOKEN", fence.clone()),
            ("TENURE_GENERATION", fence),
            ("TENURE_POISONED", poisoned.into()),
        ]
    }

    fn end(self) -> impl Future<Output = Result<(), Error>> + Send {
        self.release()
    }
}

impl Lease for TaskLockGuard {
    fn fence(&self) -> u64 {
        self.fencing_token().get()
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
    Stopped {
        /// What happened, for people.
        why: String,
        /// Why the lease went, for programs (`TENURE_LOST_CAUSE`): `expired`, `unreachable`,
        /// `taken`, `fence_regression` or `revoked`, as the telemetry's causes.
        cause: &'static str,
    },
}

/// How the command is stopped when its lease goes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    /// Time between TERM and KILL.
    pub(crate) grace: Duration,
    /// KILL lands at least this long before the lease's end.
    pub(crate) margin: Duration,
}

impl Timing {
    pub(crate) fn for_lease(lease: Duration) -> Self {
        Self { grace: (lease / 4).min(Duration::from_secs(10)), margin: lease / 20 }
    }
}

/// Runs until the command exits, while `kept` renews the lease.
pub(crate) async fn keep<G: Lease>(
    kept: &KeepAlive<G>,
    command: &mut Running,
    timing: Timing,
) -> Result<Ended, Failure> {
    let mut interrupts = signals()?;
    let lost = kept.lost();
    tokio::pin!(lost);
    loop {
        let Some(valid_until) = kept.valid_until() else {
            let status = command.stop(timing.grace).await?;
            return Ok(stopped(why_lost(kept), status));
        };
        let end = instant(valid_until);
        // TERM early enough that KILL, `grace` later, still lands `margin` before the end.
        let stop_at = end.checked_sub(timing.grace + timing.margin).unwrap_or_else(Instant::now);
        tokio::select! {
            status = command.wait() => return Ok(Ended::Exited(status?)),
            () = &mut lost => {
                let status = command.stop(timing.grace).await?;
                return Ok(stopped(why_lost(kept), status));
            }
            // Unless a renewal moved the end meanwhile, renewals are not getting through.
            () = sleep_until(stop_at) => {
                if kept.valid_until() != Some(valid_until) {
                    continue;
                }
                let kill_by = end.checked_sub(timing.margin).unwrap_or_else(Instant::now);
                let status = command.stop(kill_by.saturating_duration_since(Instant::now())).await?;
                return Ok(stopped(("the lease could not be renewed in time", "unreachable"), status));
            }
            Some(signal) = interrupts.next() => {
                say!("passing {signal} on to the command");
                command.signal(signal);
            }
        }
    }
}

/// A driver instant as tokio's.
fn instant(t: Timestamp) -> Instant {
    Instant::from_std(tenure::runtime::clock::instant(t))
}

/// What ended the lease, for people and as a cause.
fn why_lost<G: Lease>(kept: &KeepAlive<G>) -> (String, &'static str) {
    let (why, cause) = match kept.loss_cause() {
        KeepAliveEnd::Expired => ("the lease was lost: it ran out before a renewal was tried", "expired"),
        KeepAliveEnd::Unreachable => (
            "the lease was lost: renewals failed or went unanswered until it ran out (the store was unreachable)",
            "unreachable",
        ),
        KeepAliveEnd::Lost => ("the lease was lost: another holder has it", "taken"),
        KeepAliveEnd::FenceRegression => {
            ("the lease was lost: the store answered a lower fencing token (it lost its grants)", "fence_regression")
        }
        KeepAliveEnd::Revoked(reason) => {
            return (format!("the lease was revoked by an operator: {reason}"), "revoked");
        }
        _ => ("the lease was lost", "expired"),
    };
    (why.to_owned(), cause)
}

fn stopped((why, cause): (impl std::fmt::Display, &'static str), status: ExitStatus) -> Ended {
    let why = format!("{why}; the command was stopped (exit {})", crate::child::exit_code(status));
    Ended::Stopped { why, cause }
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
