//! Push wake-ups over Redis pub/sub.
//!
//! A release script publishes on `<prefix>tenure:released:<name>`. A waiter's [`Wakeup`] is
//! taken before its attempt and queues it on the name; the attempt then subscribes the shared
//! connection to the channel *before* sending its script, if it is not subscribed yet. Commands
//! on one connection run in order, so any release after the attempt is published to a
//! subscribed connection and wakes a queued waiter: no lost wake-ups.
//!
//! One release frees a lock for one holder, so it wakes one lock waiter of this process — the
//! longest queued — instead of all of them (the others would only be refused). Whoever it wakes
//! either takes the lock, whose next release wakes the next waiter, or finds it taken again and
//! queues anew before its attempt; a woken waiter that leaves without looking passes the
//! wake-up on. Election followers are few and are all woken.
//!
//! The connection re-subscribes after a reconnect, and every waiter is woken then (a release
//! during the outage published to nobody). Channels nobody waits on stay subscribed (the next
//! wait on the name costs nothing) up to [`MAX_IDLE`], past which idle ones are dropped.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use event_listener::{Event, EventListener};
use redis::{Msg, PushInfo, PushKind};
use tenure::backend::Wakeup;

use crate::connection::Connection;

/// How many channels nobody waits on may stay subscribed.
const MAX_IDLE: usize = 1024;

/// Who a release wakes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// The longest-queued waiter of this kind (lock waiters).
    One,
    /// Every waiter of this kind (election followers).
    All,
}

/// The release channels of one backend: who waits on which, and what is subscribed.
pub(crate) struct Subscriptions {
    channel_prefix: String,
    names: Mutex<HashMap<String, Entry>>,
    /// Bumped by every [`Subscriptions::redialed`]: a subscription confirmed by a connection
    /// replaced meanwhile is not recorded.
    redials: AtomicU64,
}

#[derive(Default)]
struct Entry {
    queue: VecDeque<Arc<Slot>>,
    subscribed: bool,
}

/// One waiter's place in a queue.
struct Slot {
    wake: Wake,
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

    fn wake_all(&mut self) {
        for slot in self.queue.drain(..) {
            slot.wake();
        }
    }
}

impl Subscriptions {
    pub(crate) fn new(key_prefix: &str) -> Self {
        Self {
            channel_prefix: format!("{key_prefix}tenure:released:"),
            names: Mutex::new(HashMap::new()),
            redials: AtomicU64::new(0),
        }
    }

    /// The channel a release of `name` is published on.
    pub(crate) fn channel(&self, name: &str) -> String {
        format!("{}{name}", self.channel_prefix)
    }

    fn names(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the connection hands its pushes to: a message wakes its name's waiters, a
    /// disconnection every waiter.
    pub(crate) fn push_sender(this: &Arc<Self>) -> impl Fn(PushInfo) -> Result<(), ()> + Send + Sync + 'static {
        let this = this.clone();
        move |push: PushInfo| {
            match push.kind {
                PushKind::Disconnection => this.names().values_mut().for_each(Entry::wake_all),
                PushKind::Message => {
                    if let Some(message) = Msg::from_push_info(push)
                        && let Some(name) = message.get_channel_name().strip_prefix(this.channel_prefix.as_str())
                        && let Some(entry) = this.names().get_mut(name)
                    {
                        entry.release(true);
                    }
                }
                _ => {}
            }
            Ok(())
        }
    }

    /// After a new connection replaced a dropped one (which took its subscriptions along):
    /// nothing is subscribed any more, and every waiter looks again (subscribing afresh).
    pub(crate) fn redialed(&self) {
        let mut names = self.names();
        self.redials.fetch_add(1, Ordering::SeqCst);
        names.retain(|_, entry| {
            entry.subscribed = false;
            entry.wake_all();
            false
        });
    }

    /// A wake-up for the next release of `name`; while it is queued, attempts on `name`
    /// subscribe.
    pub(crate) fn wakeup(self: &Arc<Self>, name: &str, wake: Wake) -> Wakeup {
        let slot = Arc::new(Slot { wake, woken: AtomicBool::new(false), event: Event::new() });
        self.names().entry(name.to_owned()).or_default().queue.push_back(slot.clone());
        Wakeup::new(Waiting { subscriptions: self.clone(), name: name.to_owned(), slot, listener: None, seen: false })
    }

    /// Subscribes `con` to `name`'s channel if someone waits on it and it is not subscribed:
    /// called before an attempt, on the connection the attempt is then sent on. A failure only
    /// costs the push (the waiter polls), so it is logged, not returned.
    pub(crate) async fn subscribe_wanted(&self, con: &mut Connection, name: &str) {
        let wanted = self.names().get(name).is_some_and(|e| !e.queue.is_empty() && !e.subscribed);
        if !wanted {
            return;
        }
        let redials = self.redials.load(Ordering::SeqCst);
        match con.subscribe(&self.channel(name)).await {
            Ok(()) => {
                let mut names = self.names();
                if self.redials.load(Ordering::SeqCst) == redials
                    && let Some(entry) = names.get_mut(name)
                {
                    entry.subscribed = true;
                }
            }
            Err(e) => tracing::debug!(name, error = %e, "cannot subscribe to releases; polling instead"),
        }
        self.drop_idle(con).await;
    }

    /// Unsubscribes channels nobody waits on once there are more than [`MAX_IDLE`]. A name
    /// waited on again meanwhile is woken to subscribe afresh.
    async fn drop_idle(&self, con: &mut Connection) {
        let idle: Vec<String> = {
            let mut names = self.names();
            let idle: Vec<String> =
                names.iter().filter(|(_, e)| e.queue.is_empty() && e.subscribed).map(|(n, _)| n.clone()).collect();
            if idle.len() <= MAX_IDLE {
                return;
            }
            for name in &idle {
                names.remove(name);
            }
            idle
        };
        let channels: Vec<String> = idle.iter().map(|n| self.channel(n)).collect();
        if let Err(e) = con.unsubscribe(&channels).await {
            tracing::debug!(error = %e, "cannot unsubscribe idle release channels");
        }
        let mut names = self.names();
        for name in &idle {
            if let Some(entry) = names.get_mut(name) {
                entry.subscribed = false;
                entry.wake_all();
            }
        }
    }
}

/// A queued waiter's wake-up.
struct Waiting {
    subscriptions: Arc<Subscriptions>,
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
        let mut names = self.subscriptions.names();
        let Some(entry) = names.get_mut(&self.name) else { return };
        let before = entry.queue.len();
        entry.queue.retain(|slot| !Arc::ptr_eq(slot, &self.slot));
        let was_queued = entry.queue.len() < before;
        if !was_queued && self.slot.wake == Wake::One && !self.seen {
            // Woken, but leaving without looking: the release is someone else's to take.
            entry.release(false);
        }
        if entry.queue.is_empty() && !entry.subscribed {
            names.remove(&self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_lite::future::{block_on, poll_once};
    use redis::Value;

    use super::*;

    fn message(subscriptions: &Arc<Subscriptions>, name: &str) {
        let channel = subscriptions.channel(name).into_bytes();
        let push =
            PushInfo { kind: PushKind::Message, data: vec![Value::BulkString(channel), Value::BulkString(vec![])] };
        assert!(Subscriptions::push_sender(subscriptions)(push).is_ok());
    }

    fn woken(wakeup: &mut Wakeup) -> bool {
        block_on(poll_once(wakeup)).is_some()
    }

    #[test]
    fn a_release_wakes_the_longest_waiting_lock_waiter_only() {
        let subscriptions = Arc::new(Subscriptions::new(""));
        let (mut first, mut second) =
            (subscriptions.wakeup("lock:a", Wake::One), subscriptions.wakeup("lock:a", Wake::One));
        let mut other = subscriptions.wakeup("lock:b", Wake::One);
        message(&subscriptions, "lock:a");
        assert!(woken(&mut first));
        assert!(!woken(&mut second) && !woken(&mut other));
        message(&subscriptions, "lock:a");
        assert!(woken(&mut second));
    }

    #[test]
    fn a_woken_waiter_that_leaves_without_looking_passes_the_wake_up_on() {
        let subscriptions = Arc::new(Subscriptions::new("p:"));
        let first = subscriptions.wakeup("lock:a", Wake::One);
        let mut second = subscriptions.wakeup("lock:a", Wake::One);
        message(&subscriptions, "lock:a");
        drop(first);
        assert!(woken(&mut second));
        // One that looked keeps it: nothing is passed on.
        let mut third = subscriptions.wakeup("lock:a", Wake::One);
        let mut fourth = subscriptions.wakeup("lock:a", Wake::One);
        message(&subscriptions, "lock:a");
        assert!(woken(&mut third));
        drop(third);
        assert!(!woken(&mut fourth));
    }

    #[test]
    fn followers_are_all_woken_and_a_disconnection_wakes_everyone() {
        let subscriptions = Arc::new(Subscriptions::new(""));
        let (mut a, mut b) = (subscriptions.wakeup("leader:s", Wake::All), subscriptions.wakeup("leader:s", Wake::All));
        message(&subscriptions, "leader:s");
        assert!(woken(&mut a) && woken(&mut b));
        let (mut c, mut d) = (subscriptions.wakeup("lock:x", Wake::One), subscriptions.wakeup("lock:y", Wake::One));
        let push = PushInfo { kind: PushKind::Disconnection, data: vec![] };
        assert!(Subscriptions::push_sender(&subscriptions)(push).is_ok());
        assert!(woken(&mut c) && woken(&mut d));
    }

    #[test]
    fn a_redial_wakes_everyone_and_forgets_the_subscriptions() {
        let subscriptions = Arc::new(Subscriptions::new(""));
        let mut waiter = subscriptions.wakeup("lock:a", Wake::One);
        subscriptions.names().get_mut("lock:a").expect("queued").subscribed = true;
        subscriptions.redialed();
        assert!(woken(&mut waiter));
        assert!(subscriptions.names().is_empty(), "the next wait subscribes afresh");
    }

    #[test]
    fn waiters_leave_no_trace() {
        let subscriptions = Arc::new(Subscriptions::new(""));
        drop(subscriptions.wakeup("lock:a", Wake::One));
        assert!(subscriptions.names().is_empty());
    }
}
