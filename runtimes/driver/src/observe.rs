//! What the driver tells `tracing` and the metrics ([`Meter`]): every acquisition, renewal,
//! release, loss and leadership change, with the lock name and fencing token — never the
//! ownership token, a capability.

use tenure_core::{
    Access, BackendErrorKind, ElectionEvent, ElectionMachine, Error, LeadershipLoss, LockEvent, LockMachine, LockPhase,
    LossReason, TaskLockEvent, TaskLockMachine, TaskLockPhase, Timestamp,
};
use tracing::{debug, error, info, warn};

use crate::drive::Observe;
use crate::telemetry::{Completion, Holding, Meter};

/// The `primitive` attribute of a lock's measurements.
pub(crate) fn primitive(access: Access) -> &'static str {
    match access {
        Access::Exclusive => "lock",
        Access::Read => "rwlock.read",
        Access::Write => "rwlock.write",
        Access::Permit(_) => "semaphore",
    }
}

/// Why a lease reported lost ended, for the meter.
fn loss(reason: &LossReason) -> &'static str {
    match reason {
        LossReason::Expired => "expired",
        LossReason::Revoked(_) => "revoked",
        _ => "taken",
    }
}

/// The meter's cause for a failed command on a held lease, if it ends the lease.
fn failure(e: &Error) -> Option<&'static str> {
    let regression = e.backend_error().is_some_and(|cause| cause.kind() == BackendErrorKind::FenceRegression);
    regression.then_some("fence_regression")
}

impl Observe for LockMachine {
    fn observe(&self, event: &LockEvent, meter: &Meter) {
        let name = self.key().name_str();
        match event {
            LockEvent::Acquired { fence, .. } => debug!(lock = name, fence = fence.get(), "lock acquired"),
            LockEvent::Extended { fence, previous, .. } if fence == previous => {
                debug!(lock = name, fence = fence.get(), "lock extended");
            }
            LockEvent::Extended { fence, previous, .. } => warn!(
                lock = name,
                fence = fence.get(),
                previous = previous.get(),
                "lock lease had lapsed; extend took it again with a new fencing token"
            ),
            LockEvent::Released { fence: Some(fence) } => debug!(lock = name, fence = fence.get(), "lock released"),
            LockEvent::Released { fence: None } => debug!(lock = name, "lock released"),
            LockEvent::Lost { fence, reason } => {
                meter.ending(loss(reason));
                warn!(lock = name, fence = fence.get(), ?reason, "lock lost");
            }
            LockEvent::Failed(e) if e.is_would_block() || e.is_not_owned() => debug!(lock = name, error = %e, "lock"),
            LockEvent::Failed(e) => {
                if let Some(cause) = failure(e) {
                    meter.ending(cause);
                }
                warn!(lock = name, error = %e, "lock operation failed");
            }
            _ => {}
        }
    }

    fn meter(&self, meter: &Meter, _: Timestamp) {
        let phase = self.phase();
        // Held while it counts on its lease: an extend in flight after the validity ran out does
        // not (the loss was reported), even if it comes back under the same fence.
        let counted = match phase {
            LockPhase::Held | LockPhase::Extending => self.valid_until().is_some(),
            LockPhase::Downgrading => true,
            _ => false,
        };
        let held = self.fence().filter(|_| counted).map(|fence| fence.get());
        let loss = self.loss().map(|(fence, reason)| (fence.get(), loss(&reason)));
        let holding = Holding { held, loss, waiting: phase == LockPhase::Waiting };
        meter.sync(primitive(self.access()), self.key().name_str(), holding);
    }
}

impl Observe for TaskLockMachine {
    fn observe(&self, event: &TaskLockEvent, meter: &Meter) {
        let name = self.key().name_str();
        match event {
            TaskLockEvent::Entered { fence, .. } => debug!(task_lock = name, fence = fence.get(), "task lock entered"),
            TaskLockEvent::Extended { fence, .. } => {
                debug!(task_lock = name, fence = fence.get(), "task lock extended");
            }
            TaskLockEvent::Exited { fence, held_until: None } => {
                debug!(task_lock = name, fence = fence.get(), "task lock released");
            }
            TaskLockEvent::Exited { fence, held_until: Some(_) } => {
                debug!(task_lock = name, fence = fence.get(), "task lock held for its min hold");
            }
            TaskLockEvent::Lost { fence, reason } => {
                meter.ending(loss(reason));
                warn!(task_lock = name, fence = fence.get(), ?reason, "task took too long and its lock expired");
            }
            TaskLockEvent::Failed(e) if e.is_would_block() => debug!(task_lock = name, "task lock held elsewhere"),
            TaskLockEvent::Failed(e) => {
                if let Some(cause) = failure(e) {
                    meter.ending(cause);
                }
                warn!(task_lock = name, error = %e, "task lock operation failed");
            }
            _ => {}
        }
    }

    fn meter(&self, meter: &Meter, _: Timestamp) {
        // A run that lost its lease stays `Held` until it exits: not counted from the loss on.
        let counted = matches!(self.phase(), TaskLockPhase::Held | TaskLockPhase::Extending);
        let held = self.valid_until().and(self.fence()).filter(|_| counted).map(|fence| fence.get());
        let loss = self.loss().map(|(fence, reason)| (fence.get(), loss(&reason)));
        meter.sync("task_lock", self.key().name_str(), Holding { held, loss, waiting: false });
    }
}

impl Observe for ElectionMachine {
    fn observe(&self, event: &ElectionEvent, meter: &Meter) {
        let name = self.key().name_str();
        match event {
            ElectionEvent::Elected => info!(election = name, "acquired leadership"),
            ElectionEvent::Deposed { reason } => {
                meter.leadership_ending(match reason {
                    LeadershipLoss::NotHolder => "taken",
                    LeadershipLoss::RenewDeadline => "expired",
                    _ => "stopped",
                });
                warn!(election = name, ?reason, "lost leadership");
            }
            ElectionEvent::AttemptFailed { error, log: true } => {
                error!(election = name, %error, "failed to acquire lock");
            }
            ElectionEvent::AttemptFailed { error, log: false } => {
                debug!(election = name, %error, "failed to acquire lock");
            }
            ElectionEvent::Released { released: true } => info!(election = name, "released leadership"),
            ElectionEvent::Released { released: false } => info!(election = name, "lock already released"),
            ElectionEvent::ReleaseFailed { error } => error!(election = name, %error, "failed to release leadership"),
            ElectionEvent::Stopped => info!(election = name, "stopped"),
            _ => {}
        }
    }

    fn meter(&self, meter: &Meter, now: Timestamp) {
        let fence = self.fence().map(|fence| fence.get());
        meter.sync_leading(self.key().name_str(), self.is_leader(now), fence);
    }
}

impl Completion for LockEvent {
    fn fence(&self) -> Option<u64> {
        match self {
            LockEvent::Acquired { fence, .. } | LockEvent::Extended { fence, .. } => Some(fence.get()),
            LockEvent::Downgraded { generation, .. } => Some(generation.get()),
            _ => None,
        }
    }

    fn regranted(&self) -> bool {
        matches!(self, LockEvent::Extended { fence, previous, .. } if fence != previous)
    }
}

impl Completion for TaskLockEvent {
    fn fence(&self) -> Option<u64> {
        match self {
            TaskLockEvent::Entered { fence, .. } | TaskLockEvent::Extended { fence, .. } => Some(fence.get()),
            _ => None,
        }
    }

    fn regranted(&self) -> bool {
        matches!(self, TaskLockEvent::Extended { fence, previous, .. } if fence != previous)
    }
}
