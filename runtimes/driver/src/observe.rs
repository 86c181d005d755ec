//! What the driver tells `tracing`: every acquisition, renewal, release, loss and leadership
//! change, with the lock name and fencing token — never the ownership token, a capability.

use tenure_core::{ElectionEvent, Key, LockEvent, TaskLockEvent};
use tracing::{debug, error, info, warn};

use crate::drive::Observe;

impl Observe for LockEvent {
    fn observe(&self, key: &Key) {
        let name = key.name_str();
        match self {
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
            LockEvent::Lost { fence, reason } => warn!(lock = name, fence = fence.get(), ?reason, "lock lost"),
            LockEvent::Failed(e) if e.is_would_block() || e.is_not_owned() => debug!(lock = name, error = %e, "lock"),
            LockEvent::Failed(e) => warn!(lock = name, error = %e, "lock operation failed"),
            _ => {}
        }
    }
}

impl Observe for TaskLockEvent {
    fn observe(&self, key: &Key) {
        let name = key.name_str();
        match self {
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
                warn!(task_lock = name, fence = fence.get(), ?reason, "task took too long and its lock expired");
            }
            TaskLockEvent::Failed(e) if e.is_would_block() => debug!(task_lock = name, "task lock held elsewhere"),
            TaskLockEvent::Failed(e) => warn!(task_lock = name, error = %e, "task lock operation failed"),
            _ => {}
        }
    }
}

impl Observe for ElectionEvent {
    fn observe(&self, key: &Key) {
        let name = key.name_str();
        match self {
            ElectionEvent::Elected => info!(election = name, "acquired leadership"),
            ElectionEvent::Deposed { reason } => warn!(election = name, ?reason, "lost leadership"),
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
}
