//! Push wake-ups over Redis pub/sub.
//!
//! A release script publishes on `<prefix>tenure:released:<name>`. A waiter's [`Wakeup`] is
//! taken before its attempt and queues it on the name; the attempt then subscribes the shared
//! connection to the channel *before* sending its script, if it is not subscribed yet. Commands
//! on one connection run in order, so any release after the attempt is published to a
//! subscribed connection and wakes a queued waiter: no lost wake-ups.
//!
//! Who a release wakes is [`WaitQueues`]' rule: one lock waiter of this process, every
//! election follower.
//!
//! The connection re-subscribes after a reconnect, and every waiter is woken then (a release
//! during the outage published to nobody). Channels nobody waits on stay subscribed (the next
//! wait on the name costs nothing) up to [`MAX_IDLE`], past which idle ones are dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use redis::{Msg, PushInfo, PushKind};
use tenure::backend::Wakeup;
use tenure_store::WaitQueues;
pub(crate) use tenure_store::Wake;

use crate::connection::Connection;

/// How many channels nobody waits on may stay subscribed.
const MAX_IDLE: usize = 1024;

/// The release channels of one backend: who waits on which, and what is subscribed.
pub(crate) struct Subscriptions {
    channel_prefix: String,
    /// Where the store publishes the locks it hands to this backend's queued waiters.
    grant_channel: String,
    /// The grant channel is subscribed on the current connection.
    grants_subscribed: AtomicBool,
    queues: Arc<WaitQueues>,
    /// Bumped by every [`Subscriptions::redialed`]: a subscription confirmed by a connection
    /// replaced meanwhile is not recorded.
    redials: AtomicU64,
}

impl Subscriptions {
    pub(crate) fn new(key_prefix: &str) -> Self {
        Self {
            channel_prefix: format!("{key_prefix}tenure:released:"),
            grant_channel: format!("{key_prefix}tenure:granted:{}", tenure_store::route_id()),
            grants_subscribed: AtomicBool::new(false),
            queues: Arc::new(WaitQueues::new()),
            redials: AtomicU64::new(0),
        }
    }

    /// The channel a release of `name` is published on.
    pub(crate) fn channel(&self, name: &str) -> String {
        format!("{}{name}", self.channel_prefix)
    }

    /// What the connection hands its pushes to: a message wakes its name's waiters, a
    /// disconnection every waiter.
    pub(crate) fn push_sender(this: &Arc<Self>) -> impl Fn(PushInfo) -> Result<(), ()> + Send + Sync + 'static {
        let this = this.clone();
        move |push: PushInfo| {
            match push.kind {
                PushKind::Disconnection => this.queues.wake_everyone(),
                PushKind::Message => {
                    let Some(message) = Msg::from_push_info(push) else { return Ok(()) };
                    if message.get_channel_name() == this.grant_channel {
                        match tenure_store::grant(message.get_payload_bytes()) {
                            Ok((name, token, fence)) => {
                                if !this.queues.granted(&name, &token, fence) {
                                    tracing::debug!(name, fence = fence.get(), "a hand-off reached no waiter here");
                                }
                            }
                            Err(e) => tracing::warn!(error = %e, "ignoring a hand-off message"),
                        }
                    } else if let Some(name) = message.get_channel_name().strip_prefix(this.channel_prefix.as_str()) {
                        this.queues.released(name);
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
        let mut names = self.queues.names();
        self.redials.fetch_add(1, Ordering::SeqCst);
        self.grants_subscribed.store(false, Ordering::SeqCst);
        names.retain(|_, entry| {
            entry.subscribed = false;
            entry.wake_all();
            false
        });
    }

    /// A wake-up for the next release of `name`; while it is queued, attempts on `name`
    /// subscribe.
    pub(crate) fn wakeup(&self, name: &str, wake: Wake) -> Wakeup {
        self.queues.wakeup(name, wake)
    }

    /// The channel the store publishes this backend's hand-offs on.
    pub(crate) fn grant_channel(&self) -> &str {
        &self.grant_channel
    }

    /// A wake-up for `token`'s turn on `name` (see [`tenure::backend::LockBackend::turn`]).
    pub(crate) fn turn(&self, name: &str, token: &str) -> Wakeup {
        self.queues.turn(name, token)
    }

    /// The fencing token the store handed `token` on `name`, once its message arrived.
    pub(crate) fn take_grant(&self, name: &str, token: &str) -> Option<tenure_core::FencingToken> {
        self.queues.take_grant(name, token)
    }

    /// Subscribes `con` to the grant channel if it is not yet: called before a queued attempt,
    /// on the connection the attempt is then sent on, so a hand-off after the attempt is heard.
    /// A failure only costs the push (the waiter's next attempt finds the lock handed to it).
    pub(crate) async fn subscribe_grants(&self, con: &mut Connection) {
        if self.grants_subscribed.load(Ordering::SeqCst) {
            return;
        }
        let redials = self.redials.load(Ordering::SeqCst);
        match con.subscribe(&self.grant_channel).await {
            Ok(()) if self.redials.load(Ordering::SeqCst) == redials => {
                self.grants_subscribed.store(true, Ordering::SeqCst);
            }
            Ok(()) => {}
            Err(e) => tracing::debug!(error = %e, "cannot subscribe to hand-offs; polling instead"),
        }
    }

    /// Subscribes `con` to `name`'s channel if someone waits on its releases (turns need none:
    /// the store hands them the lock) and it is not subscribed:
    /// called before an attempt, on the connection the attempt is then sent on. A failure only
    /// costs the push (the waiter polls), so it is logged, not returned.
    pub(crate) async fn subscribe_wanted(&self, con: &mut Connection, name: &str) {
        let wanted = self.queues.names().get(name).is_some_and(|e| e.wants_releases() && !e.subscribed);
        if !wanted {
            return;
        }
        let redials = self.redials.load(Ordering::SeqCst);
        match con.subscribe(&self.channel(name)).await {
            Ok(()) => {
                let mut names = self.queues.names();
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
            let mut names = self.queues.names();
            let idle: Vec<String> =
                names.iter().filter(|(_, e)| !e.is_waited_on() && e.subscribed).map(|(n, _)| n.clone()).collect();
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
        let mut names = self.queues.names();
        for name in &idle {
            if let Some(entry) = names.get_mut(name) {
                entry.subscribed = false;
                entry.wake_all();
            }
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
    fn a_message_wakes_its_names_waiter_and_a_disconnection_everyone() {
        let subscriptions = Arc::new(Subscriptions::new("p:"));
        let (mut a, mut b) = (subscriptions.wakeup("lock:a", Wake::One), subscriptions.wakeup("lock:b", Wake::One));
        message(&subscriptions, "lock:a");
        assert!(woken(&mut a) && !woken(&mut b));
        let mut c = subscriptions.wakeup("leader:s", Wake::All);
        let push = PushInfo { kind: PushKind::Disconnection, data: vec![] };
        assert!(Subscriptions::push_sender(&subscriptions)(push).is_ok());
        assert!(woken(&mut b) && woken(&mut c));
    }

    #[test]
    fn a_redial_wakes_everyone_and_forgets_the_subscriptions() {
        let subscriptions = Arc::new(Subscriptions::new(""));
        let mut waiter = subscriptions.wakeup("lock:a", Wake::One);
        subscriptions.queues.names().get_mut("lock:a").expect("queued").subscribed = true;
        subscriptions.redialed();
        assert!(woken(&mut waiter));
        assert!(subscriptions.queues.names().is_empty(), "the next wait subscribes afresh");
    }
}
