//! Deliberate defects, for the simulator to prove that its checks can fail (feature
//! `bug-injection`, off by default; nothing else turns it on).
//!
//! A defect is switched on per instance with `inject` on a machine or on the [`StoreModel`];
//! without the feature neither the switch nor the field exists.
//!
//! [`StoreModel`]: crate::StoreModel

use std::fmt;

/// A set of deliberate defects.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Bugs(u8);

impl Bugs {
    /// No defect.
    pub const NONE: Self = Self(0);
    /// Lock and task-lock machines count a lease's validity from the reply instead of the
    /// request, so a slow reply stretches the holder's belief past the store's lease.
    pub const VALIDITY_FROM_REPLY: Self = Self(1);
    /// The store model forgets a name's fencing counter when the lock is released, so the next
    /// holder is issued fencing token 1 again.
    pub const FENCE_RESET_ON_RELEASE: Self = Self(1 << 1);
    /// An election machine keeps believing it leads after its renew deadline.
    pub const LEADER_IGNORES_DEADLINE: Self = Self(1 << 2);
    /// A lock machine handed the lock by the store counts the lease from the push instead of
    /// from its first attempt answered "queued", so a late push stretches its belief past the
    /// store's lease.
    pub const GRANT_VALIDITY_FROM_PUSH: Self = Self(1 << 3);
    /// The store model hands a lock to a queued waiter whose place lapsed (one that may have
    /// vanished), blocking the queue for a whole lease.
    pub const HAND_OVER_LAPSED: Self = Self(1 << 4);

    /// The store model grants a read-write lock's write lease while readers hold theirs.
    pub const RW_WRITE_BESIDE_READERS: Self = Self(1 << 5);
    /// The store model forgets that a writer expired without releasing: the next write grant
    /// is not marked poisoned.
    pub const RW_POISON_FORGOTTEN: Self = Self(1 << 6);
    /// The store model grants a semaphore's permit when every permit is taken already.
    pub const SEM_OVER_GRANT: Self = Self(1 << 7);

    /// Every defect with its command-line name.
    pub const NAMED: [(&'static str, Self); 8] = [
        ("validity-from-reply", Self::VALIDITY_FROM_REPLY),
        ("fence-reset-on-release", Self::FENCE_RESET_ON_RELEASE),
        ("leader-ignores-deadline", Self::LEADER_IGNORES_DEADLINE),
        ("grant-validity-from-push", Self::GRANT_VALIDITY_FROM_PUSH),
        ("hand-over-lapsed", Self::HAND_OVER_LAPSED),
        ("rw-write-beside-readers", Self::RW_WRITE_BESIDE_READERS),
        ("rw-poison-forgotten", Self::RW_POISON_FORGOTTEN),
        ("sem-over-grant", Self::SEM_OVER_GRANT),
    ];

    /// The defect called `name` (see [`Bugs::NAMED`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMED.iter().find(|(n, _)| *n == name).map(|&(_, bug)| bug)
    }

    /// Whether every defect of `other` is in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// Both sets.
    #[must_use]
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether no defect is on.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Debug for Bugs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = Self::NAMED.iter().filter(|(_, bug)| self.contains(*bug)).map(|(name, _)| *name);
        f.debug_set().entries(names).finish()
    }
}

impl fmt::Display for Bugs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names = Self::NAMED.iter().filter(|(_, bug)| self.contains(*bug)).map(|(name, _)| *name);
        match names.next() {
            None => f.write_str("none"),
            Some(first) => {
                f.write_str(first)?;
                names.try_for_each(|name| write!(f, ",{name}"))
            }
        }
    }
}
