//! Push wake-ups: one watch per store on its key prefix, for deletions only. A contender's key
//! is deleted when it releases, when its lease expires and when an attempt gives up its place,
//! so a waiter on the name is woken the moment the holder is gone — no polling in the common
//! case (the driver's retry interval stays the fallback).
//!
//! The watch is created before the store is handed out, so a release after any attempt is seen;
//! when the stream ends (a member lost, the cluster restarted) every waiter is woken and the
//! watch is made again.

use std::sync::Arc;
use std::time::Duration;

use tenure_core::BackendError;
use tenure_store::WaitQueues;

use crate::call::{failed, tokio_handle};
use crate::client::{Client, WatchStream, is_deletion};
use crate::takeover::Deletions;

/// The store's watch: stopped when the last clone of the store is dropped.
pub(crate) struct Watch {
    pub(crate) queues: Arc<WaitQueues>,
    /// The deletions seen, as hints for a follower's takeover.
    pub(crate) deletions: Arc<Deletions>,
    task: tokio::task::JoinHandle<()>,
    stopped: std::sync::atomic::AtomicBool,
}

impl Watch {
    /// Stops watching: the store is closed.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, std::sync::atomic::Ordering::SeqCst);
        self.task.abort();
        self.queues.wake_everyone();
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Watch {
    /// Watches `prefix` on `client` (created before this returns).
    pub(crate) async fn start(client: Client, prefix: String) -> Result<Self, BackendError> {
        let queues = Arc::new(WaitQueues::new());
        let handle = tokio_handle();
        let first = {
            let (client, prefix) = (client.clone(), prefix.clone());
            handle.spawn(async move { client.watch_deletions(&prefix).await })
        };
        let stream = first
            .await
            .map_err(|e| {
                BackendError::new(tenure_core::BackendErrorKind::Other, format!("etcd: watching failed: {e}"))
            })?
            .map_err(|e| failed("watching the store's keys", &e))?;
        let deletions = Arc::new(Deletions::default());
        let task = handle.spawn(run(client, prefix, queues.clone(), deletions.clone(), stream));
        Ok(Self { queues, deletions, task, stopped: std::sync::atomic::AtomicBool::new(false) })
    }
}

/// Hands every deletion under `prefix` to the waiters of its name, for as long as the store lives.
async fn run(
    client: Client,
    prefix: String,
    queues: Arc<WaitQueues>,
    deletions: Arc<Deletions>,
    mut stream: WatchStream,
) {
    loop {
        let ended = loop {
            let response = match stream.message().await {
                Ok(Some(response)) => response,
                Ok(None) => break "the stream ended".to_owned(),
                Err(e) => break e.to_string(),
            };
            if response.canceled {
                // Cancelled by the server (a compaction, a permission taken away): made again.
                break format!("the cluster cancelled it: {}", response.cancel_reason);
            }
            let deleted = || response.events.iter().filter_map(is_deletion);
            // Every deletion of the response is known before anyone is woken (a clean release
            // deletes the leader's key and the count together).
            for kv in deleted() {
                match count_of(kv.key(), &prefix) {
                    Some(name) => deletions.count(name, kv.mod_revision()),
                    None => {
                        if let Some(name) = name_of(kv.key(), &prefix) {
                            deletions.candidate(name, kv.mod_revision());
                        }
                    }
                }
            }
            for kv in deleted() {
                if let Some(name) = name_of(kv.key(), &prefix).filter(|_| count_of(kv.key(), &prefix).is_none()) {
                    queues.released(name);
                }
            }
        };
        tracing::debug!(reason = %ended, "etcd: the watch of the store's keys ended; making it again");
        // A release may have gone unseen while the stream was down.
        queues.wake_everyone();
        // Made again after 0.5 s, then less and less often while it is refused (a refusal for
        // a login may log in again each time): at most every 10 s.
        let mut pause = Duration::from_millis(500);
        loop {
            tokio::time::sleep(pause).await;
            match client.watch_deletions(&prefix).await {
                Ok(again) => {
                    stream = again;
                    queues.wake_everyone();
                    break;
                }
                Err(e) => tracing::debug!(error = %e, "etcd: the watch is not back yet"),
            }
            pause = (pause * 2).min(Duration::from_secs(10));
        }
    }
}

/// The name whose count of transitions `<prefix>tenure:last:<name>` is.
fn count_of<'a>(key: &'a [u8], prefix: &str) -> Option<&'a str> {
    std::str::from_utf8(key).ok()?.strip_prefix(prefix)?.strip_prefix(crate::election::LAST)
}

/// The name a contender's key `<prefix><name>/<lease>` belongs to.
fn name_of<'a>(key: &'a [u8], prefix: &str) -> Option<&'a str> {
    let key = std::str::from_utf8(key).ok()?.strip_prefix(prefix)?;
    key.rsplit_once('/').map(|(name, _)| name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_contenders_key_names_its_lock() {
        assert_eq!(super::name_of(b"t/lock:cart/694d", "t/"), Some("lock:cart"));
        assert_eq!(super::name_of(b"t/lock:a/b/694d", "t/"), Some("lock:a/b"));
        assert_eq!(super::name_of(b"t/tenure:schedule:x", "t/"), None);
        assert_eq!(super::name_of(b"other/lock:cart/1", "t/"), None);
        assert_eq!(super::count_of(b"t/tenure:last:leader:a/b", "t/"), Some("leader:a/b"));
        assert_eq!(super::count_of(b"t/leader:a/694d", "t/"), None);
    }
}
