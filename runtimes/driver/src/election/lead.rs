//! Waiting on leadership, and running work only while leading.

use std::future::Future;

use futures_lite::future;
use tenure_core::{ElectionMachine, Error, FencingToken, WouldBlockReason};

use super::LeaderElection;
use crate::drive::watch;
use crate::runtime::Runtime;

impl<R: Runtime> LeaderElection<R> {
    /// Waits until this worker leads. Never misses a change: it re-checks after every turn of
    /// the election loop (needs the loop running: [`LeaderElection::start`]).
    pub async fn wait_for_leader(&self) {
        let cell = &self.shared().cell;
        loop {
            let listener = cell.changed.listen();
            if self.is_leader() {
                return;
            }
            listener.await;
        }
    }

    /// Waits until this worker does not lead (at once if it does not).
    pub async fn wait_lose_leader(&self) {
        let (cell, runtime) = (&self.shared().cell, &self.shared().runtime);
        watch(cell, runtime, |m: &ElectionMachine, now| m.leading_until().filter(|_| m.is_leader(now))).await;
    }

    /// Each change of this worker's leadership from now on, in order: `true` when it starts
    /// leading, `false` when it stops (lost, or the election stopped). Edge-triggered: a term
    /// that began and ended before the stream looked is still told, as `true` then `false`
    /// (several such terms in a row are told as one); never two alike in a row. What the bindings' leadership listeners hear. Holds the
    /// election (a handle) while the stream lives.
    pub fn changes(&self) -> impl futures_lite::Stream<Item = bool> + Send + 'static {
        let told = self.shared().cell.lock().terms();
        futures_lite::stream::unfold((self.clone(), false, told), |(election, leading, told)| async move {
            let cell = &election.shared().cell;
            let term_after = |seen: u64| async move {
                loop {
                    let listener = cell.changed.listen();
                    let terms = cell.lock().terms();
                    if terms > seen {
                        return terms;
                    }
                    listener.await;
                }
            };
            if leading {
                // The told term ends: lost now, or a later term has begun since.
                future::or(election.wait_lose_leader(), async {
                    term_after(told).await;
                })
                .await;
                Some((false, (election, false, told)))
            } else {
                let term = term_after(told).await;
                Some((true, (election, true, term)))
            }
        })
    }

    /// Runs `work` while this worker leads: waits for leadership, then polls `work` until it
    /// completes (`Some(output)`) or leadership is lost, which drops it (`None`). Cancellation is
    /// cooperative: it lands at the work's next await. Fence writes that must never overlap a
    /// successor.
    pub async fn lead<F: Future>(&self, work: F) -> Option<F::Output> {
        self.wait_for_leader().await;
        future::or(async { Some(work.await) }, async {
            self.wait_lose_leader().await;
            None
        })
        .await
    }

    /// Runs `work()` again and again while leading (after each completion, and after each
    /// re-election when a loss dropped it), until it fails; returns that error.
    pub async fn lead_repeat<F, Fut, E>(&self, mut work: F) -> E
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<(), E>>,
    {
        loop {
            if let Some(Err(e)) = self.lead(work()).await {
                return e;
            }
        }
    }

    /// A non-blocking check for scheduled work: a guard if this worker leads now, else
    /// [`Error::WouldBlock`] (`"Not leader: <name>"`).
    pub fn guard(&self) -> Result<LeaderGuard<R>, Error> {
        if self.is_leader() {
            return Ok(LeaderGuard { election: self.clone(), fence: self.fence() });
        }
        Err(self.not_leader())
    }

    /// The error of work turned away, or cancelled, because this worker does not lead:
    /// [`Error::WouldBlock`] (`"Not leader: <name>"`), what a binding's `lead` aborts its work with.
    pub fn not_leader(&self) -> Error {
        Error::WouldBlock { name: self.name().as_str().to_owned(), reason: WouldBlockReason::NotLeader }
    }
}

/// Proof that this worker led when the guard was taken.
#[must_use]
#[derive(Debug)]
pub struct LeaderGuard<R: Runtime> {
    election: LeaderElection<R>,
    fence: Option<FencingToken>,
}

impl<R: Runtime> LeaderGuard<R> {
    /// The fencing token of the term the guard was taken in ([`LeaderElection::fence`]).
    pub fn fence(&self) -> Option<FencingToken> {
        self.fence
    }

    /// Whether this worker still leads.
    pub fn is_valid(&self) -> bool {
        self.election.is_leader()
    }

    /// Completes when this worker stops leading.
    pub fn lost(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let election = self.election.clone();
        async move { election.wait_lose_leader().await }
    }
}
