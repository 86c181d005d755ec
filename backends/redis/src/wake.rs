//! Push wake-ups over Redis pub/sub.
//!
//! A release script publishes on `<prefix>tenure:released:<name>`. A waiter's [`Wakeup`] is
//! taken before its attempt and registers interest in the name; the attempt then subscribes
//! the shared connection to the channel *before* sending its script, if it is not subscribed yet.
//! Commands on one connection run in order, so any release after the attempt is published to a
//! subscribed connection and rings the waiter: no lost wake-ups.
//!
//! The connection re-subscribes after a reconnect, and every waiter is woken then (a release
//! during the outage published to nobody). Channels nobody waits on stay subscribed (the next
//! wait on the name costs nothing) up to [`MAX_IDLE`], past which idle ones are dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use redis::{Msg, PushInfo, PushKind};
use tenure::backend::{ReleaseSignals, Wakeup};

use crate::connection::Connection;

/// How many channels nobody waits on may stay subscribed.
const MAX_IDLE: usize = 1024;

/// The release channels of one backend: who waits on which, and what is subscribed.
pub(crate) struct Subscriptions {
    channel_prefix: String,
    released: ReleaseSignals,
    names: Mutex<HashMap<String, Entry>>,
}

#[derive(Default)]
struct Entry {
    waiters: usize,
    subscribed: bool,
}

impl Subscriptions {
    pub(crate) fn new(key_prefix: &str) -> Self {
        Self {
            channel_prefix: format!("{key_prefix}tenure:released:"),
            released: ReleaseSignals::new(),
            names: Mutex::new(HashMap::new()),
        }
    }

    /// The channel a release of `name` is published on.
    pub(crate) fn channel(&self, name: &str) -> String {
        format!("{}{name}", self.channel_prefix)
    }

    fn names(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the connection hands its pushes to: a message rings its name, a disconnection
    /// rings every name.
    pub(crate) fn push_sender(this: &Arc<Self>) -> impl Fn(PushInfo) -> Result<(), ()> + Send + Sync + 'static {
        let this = this.clone();
        move |push: PushInfo| {
            match push.kind {
                PushKind::Disconnection => this.released.ring_all(),
                PushKind::Message => {
                    if let Some(name) =
                        Msg::from_push_info(push).and_then(|m| this.name_of(m.get_channel_name()).map(str::to_owned))
                    {
                        this.released.ring(&name);
                    }
                }
                _ => {}
            }
            Ok(())
        }
    }

    fn name_of<'c>(&self, channel: &'c str) -> Option<&'c str> {
        channel.strip_prefix(self.channel_prefix.as_str())
    }

    /// A wake-up for the next release of `name`; while it lives, attempts on `name` subscribe.
    pub(crate) fn wakeup(self: &Arc<Self>, name: &str) -> Wakeup {
        self.names().entry(name.to_owned()).or_default().waiters += 1;
        let interest = Interest { subscriptions: self.clone(), name: name.to_owned() };
        let ticket = self.released.ticket(name);
        Wakeup::new(async move {
            let _interest = interest;
            ticket.await;
        })
    }

    /// Subscribes `con` to `name`'s channel if someone waits on it and it is not subscribed:
    /// called before an attempt, on the connection the attempt is then sent on. A failure only
    /// costs the push (the waiter polls), so it is logged, not returned.
    pub(crate) async fn subscribe_wanted(&self, con: &mut Connection, name: &str) {
        let wanted = self.names().get(name).is_some_and(|e| e.waiters > 0 && !e.subscribed);
        if !wanted {
            return;
        }
        match con.subscribe(&self.channel(name)).await {
            Ok(()) => {
                if let Some(entry) = self.names().get_mut(name) {
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
                names.iter().filter(|(_, e)| e.waiters == 0 && e.subscribed).map(|(n, _)| n.clone()).collect();
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
                self.released.ring(name);
            }
        }
    }
}

/// A waiter's interest in a name, for as long as its wake-up lives.
struct Interest {
    subscriptions: Arc<Subscriptions>,
    name: String,
}

impl Drop for Interest {
    fn drop(&mut self) {
        let mut names = self.subscriptions.names();
        if let Some(entry) = names.get_mut(&self.name) {
            entry.waiters = entry.waiters.saturating_sub(1);
            if entry.waiters == 0 && !entry.subscribed {
                names.remove(&self.name);
            }
        }
    }
}
