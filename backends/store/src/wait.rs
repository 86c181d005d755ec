//! Waiters on releases, queued per name, for a backend whose store pushes releases (Redis
//! pub/sub, PostgreSQL LISTEN/NOTIFY).
//!
//! One release frees a lock for one holder, so it wakes one lock waiter of this process — the
//! longest queued — instead of all of them (the others would only be refused). Whoever it wakes
//! either takes the lock, whose next release wakes the next waiter, or finds it taken again and
//! queues anew before its attempt; a woken waiter that leaves without looking passes the
//! wake-up on. Election followers are few and are all woken.
//!
//! A name's entry also records whether the store is known to push its releases to this process
//! ([`Entry::subscribed`]), for a backend that subscribes name by name: an entry nobody waits on
//! stays while it is subscribed.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use event_listener::{Event, EventListener};

use tenure_core::FencingToken;

use tenure::backend::Wakeup;

/// Who a release wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The longest-queued waiter of this kind (lock waiters).
    One,
    /// Every waiter of this kind (election followers).
    All,
}

/// The waiters of one backend, by name.
#[derive(Debug, Default)]
pub struct WaitQueues {
    names: Mutex<HashMap<String, Entry>>,
}

/// One name's waiters, and whether its releases are pushed to this process.
#[derive(Debug, Default)]
pub struct Entry {
    queue: VecDeque<Arc<Slot>>,
    /// Locks the store handed to a waiter of this process, by token, until it takes them.
    grants: Vec<(String, FencingToken)>,
    /// The store pushes this name's releases here (kept up to date by a backend that
    /// subscribes per name; unused by one that hears every release).
    pub subscribed: bool,
}

/// One waiter's place in a queue.
#[derive(Debug)]
struct Slot {
    wake: Wake,
    /// The token whose turn this is (a waiter queued in the store, [`WaitQueues::turn`]).
    token: Option<String>,
    woken: AtomicBool,
    event: Event,
}

impl Slot {
    fn wake(&self) {
        self.woken.store(true, Ordering::SeqCst);
        self.event.notify(usize::MAX);
    }
}

impl Entry {
    /// Whether anyone waits on the name.
    pub fn is_waited_on(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Whether anyone waits on the name's releases: a waiter other than a turn (a turn is
    /// handed the lock by the store, [`WaitQueues::turn`], and needs no release message).
    pub fn wants_releases(&self) -> bool {
        self.queue.iter().any(|slot| slot.token.is_none())
    }

    /// Wakes the first `One` waiter, and every `All` waiter if `all` (a release; not when a
    /// woken waiter passes its wake-up on), taking them off the queue.
    fn release(&mut self, all: bool) {
        let mut one = false;
        self.queue.retain(|slot| {
            let wake = if slot.wake == Wake::All { all } else { !std::mem::replace(&mut one, true) };
            if wake {
                slot.wake();
            }
            !wake
        });
    }

    /// Wakes every waiter on the name.
    pub fn wake_all(&mut self) {
        for slot in self.queue.drain(..) {
            slot.wake();
        }
    }
}

impl WaitQueues {
    /// Queues with nobody waiting.
    pub fn new() -> Self {
        Self::default()
    }

    /// The entries, for a backend's own bookkeeping of subscriptions.
    pub fn names(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `name` was released: wakes its longest-waiting lock waiter and every follower.
    pub fn released(&self, name: &str) {
        if let Some(entry) = self.names().get_mut(name) {
            entry.release(true);
        }
    }

    /// Wakes every waiter on every name (a connection was lost: releases may have been missed).
    pub fn wake_everyone(&self) {
        self.names().values_mut().for_each(Entry::wake_all);
    }

    /// A wake-up for the next release of `name`, queued now.
    pub fn wakeup(self: &Arc<Self>, name: &str, wake: Wake) -> Wakeup {
        self.queued(name, Slot { wake, token: None, woken: AtomicBool::new(false), event: Event::new() })
    }

    /// A wake-up for `token`'s turn on `name` (a lock waiter queued in the store): the store
    /// handed it the lock ([`WaitQueues::granted`]), or `name` was released without a hand-off.
    pub fn turn(self: &Arc<Self>, name: &str, token: &str) -> Wakeup {
        let slot =
            Slot { wake: Wake::One, token: Some(token.to_owned()), woken: AtomicBool::new(false), event: Event::new() };
        self.queued(name, slot)
    }

    fn queued(self: &Arc<Self>, name: &str, slot: Slot) -> Wakeup {
        let slot = Arc::new(slot);
        self.names().entry(name.to_owned()).or_default().queue.push_back(slot.clone());
        Wakeup::new(Waiting { queues: self.clone(), name: name.to_owned(), slot, listener: None, seen: false })
    }

    /// The store handed `name` to `token` with `fence`: kept for the waiter, whose turn is
    /// woken. False if no waiter of this process waits under `token` (it gave up, or it is
    /// someone else's): the store then holds the lock for nobody here until its lease ends, or
    /// the gone waiter's own release frees it.
    pub fn granted(&self, name: &str, token: &str, fence: FencingToken) -> bool {
        let mut names = self.names();
        let Some(entry) = names.get_mut(name) else { return false };
        let Some(at) = entry.queue.iter().position(|slot| slot.token.as_deref() == Some(token)) else {
            return false;
        };
        entry.grants.retain(|(t, _)| t != token);
        entry.grants.push((token.to_owned(), fence));
        if let Some(slot) = entry.queue.remove(at) {
            slot.wake();
        }
        true
    }

    /// The fencing token the store handed `token` on `name`, if its push arrived (given once).
    pub fn take_grant(&self, name: &str, token: &str) -> Option<FencingToken> {
        let mut names = self.names();
        let entry = names.get_mut(name)?;
        let at = entry.grants.iter().position(|(t, _)| t == token)?;
        Some(entry.grants.swap_remove(at).1)
    }
}

/// A queued waiter's wake-up.
struct Waiting {
    queues: Arc<WaitQueues>,
    name: String,
    slot: Arc<Slot>,
    listener: Option<EventListener>,
    /// The waiter saw its wake-up (and will attempt).
    seen: bool,
}

impl Future for Waiting {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.slot.woken.load(Ordering::SeqCst) {
                self.seen = true;
                return Poll::Ready(());
            }
            let this = &mut *self;
            match &mut this.listener {
                // Listen, then look again: a wake between the look and the listen is seen.
                None => this.listener = Some(this.slot.event.listen()),
                Some(listener) => {
                    if Pin::new(listener).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    this.listener = None;
                }
            }
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut names = self.queues.names();
        let Some(entry) = names.get_mut(&self.name) else { return };
        let before = entry.queue.len();
        entry.queue.retain(|slot| !Arc::ptr_eq(slot, &self.slot));
        let was_queued = entry.queue.len() < before;
        if !was_queued && self.slot.wake == Wake::One && !self.seen {
            // Woken, but leaving without looking: the release is someone else's to take.
            entry.release(false);
        }
        if let Some(token) = self.slot.token.as_deref().filter(|_| !self.seen) {
            // Leaving without looking: nobody will take what the store handed it.
            entry.grants.retain(|(t, _)| t != token);
        }
        if entry.queue.is_empty() && entry.grants.is_empty() && !entry.subscribed {
            names.remove(&self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_lite::future::{block_on, poll_once};

    use super::*;

    fn woken(wakeup: &mut Wakeup) -> bool {
        block_on(poll_once(wakeup)).is_some()
    }

    #[test]
    fn a_release_wakes_the_longest_waiting_lock_waiter_only() {
        let queues = Arc::new(WaitQueues::new());
        let (mut first, mut second) = (queues.wakeup("lock:a", Wake::One), queues.wakeup("lock:a", Wake::One));
        let mut other = queues.wakeup("lock:b", Wake::One);
        queues.released("lock:a");
        assert!(woken(&mut first));
        assert!(!woken(&mut second) && !woken(&mut other));
        queues.released("lock:a");
        assert!(woken(&mut second));
    }

    #[test]
    fn a_woken_waiter_that_leaves_without_looking_passes_the_wake_up_on() {
        let queues = Arc::new(WaitQueues::new());
        let first = queues.wakeup("lock:a", Wake::One);
        let mut second = queues.wakeup("lock:a", Wake::One);
        queues.released("lock:a");
        drop(first);
        assert!(woken(&mut second));
        // One that looked keeps it: nothing is passed on.
        let mut third = queues.wakeup("lock:a", Wake::One);
        let mut fourth = queues.wakeup("lock:a", Wake::One);
        queues.released("lock:a");
        assert!(woken(&mut third));
        drop(third);
        assert!(!woken(&mut fourth));
    }

    #[test]
    fn followers_are_all_woken_and_everyone_can_be_woken() {
        let queues = Arc::new(WaitQueues::new());
        let (mut a, mut b) = (queues.wakeup("leader:s", Wake::All), queues.wakeup("leader:s", Wake::All));
        queues.released("leader:s");
        assert!(woken(&mut a) && woken(&mut b));
        let (mut c, mut d) = (queues.wakeup("lock:x", Wake::One), queues.wakeup("lock:y", Wake::One));
        queues.wake_everyone();
        assert!(woken(&mut c) && woken(&mut d));
    }

    #[test]
    fn waiters_leave_no_trace_unless_subscribed() {
        let queues = Arc::new(WaitQueues::new());
        drop(queues.wakeup("lock:a", Wake::One));
        assert!(queues.names().is_empty());
        let waiter = queues.wakeup("lock:b", Wake::One);
        queues.names().get_mut("lock:b").expect("queued").subscribed = true;
        drop(waiter);
        assert!(queues.names().get("lock:b").is_some_and(|e| !e.is_waited_on()));
    }

    #[test]
    fn a_grant_wakes_the_turn_of_its_token_and_is_taken_once() {
        let queues = Arc::new(WaitQueues::new());
        let mut plain = queues.wakeup("lock:a", Wake::One);
        let (mut first, mut second) = (queues.turn("lock:a", "t1"), queues.turn("lock:a", "t2"));
        assert!(queues.granted("lock:a", "t2", FencingToken::FIRST));
        assert!(woken(&mut second) && !woken(&mut first) && !woken(&mut plain), "only t2's turn");
        assert_eq!(queues.take_grant("lock:a", "t2"), Some(FencingToken::FIRST));
        assert_eq!(queues.take_grant("lock:a", "t2"), None);
        assert!(!queues.granted("lock:a", "t9", FencingToken::FIRST), "nobody waits under t9");
        // A release without a hand-off wakes the longest waiter, as before.
        queues.released("lock:a");
        assert!(woken(&mut plain) && !woken(&mut first));
    }

    #[test]
    fn turns_want_no_release_messages_other_waiters_do() {
        let queues = Arc::new(WaitQueues::new());
        let _turn = queues.turn("lock:a", "t1");
        assert!(queues.names().get("lock:a").is_some_and(|e| e.is_waited_on() && !e.wants_releases()));
        let _plain = queues.wakeup("lock:a", Wake::One);
        assert!(queues.names().get("lock:a").is_some_and(Entry::wants_releases));
    }

    #[test]
    fn a_grant_whose_waiter_left_without_looking_leaves_no_trace() {
        let queues = Arc::new(WaitQueues::new());
        let turn = queues.turn("lock:a", "t1");
        assert!(queues.granted("lock:a", "t1", FencingToken::FIRST));
        drop(turn);
        assert!(queues.names().is_empty());
    }
}
