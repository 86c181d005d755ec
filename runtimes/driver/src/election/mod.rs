//! `LeaderElection`: one leader among the workers sharing a backend (spec §1.6, §3.5).

mod builder;
mod health;
mod lead;

use std::sync::Arc;
use std::time::Duration;

pub use builder::LeaderElectionBuilder;
pub use health::LeaderHealth;
pub use lead::LeaderGuard;
use tenure_core::{
    ElectionEvent, ElectionMachine, Error, FencingToken, Key, KeyKind, LeaderElectionConfig, LeaderRecord, Metadata,
    Name, StoreOp, Timestamp, Token,
};

use crate::backend::{LeaderElectionBackend, Signal, Wakeup};
use crate::drive::{Cell, Execute, Purpose, Reply, follow};
use crate::runtime::Runtime;

/// A worker's seat in a leader election.
///
/// [`LeaderElection::start`] runs the election loop as a background task: an `acquire_or_renew`
/// every jittered `retry_interval`, each bounded by `backend_timeout`. Leadership is believed
/// until `renew_deadline` after the last confirmation (counted from the request's send), ends
/// with an event at that instant, and ends at once on [`LeaderElection::stop`], which then
/// releases the lease so another worker can take over immediately. Dropping the last clone of a
/// `LeaderElection` stops it too.
pub struct LeaderElection<R: Runtime> {
    handle: Arc<Handle<R>>,
}

/// Stops the election when the last user handle goes (the loop task holds only `shared`).
struct Handle<R: Runtime> {
    shared: Arc<ElectionShared<R>>,
}

impl<R: Runtime> Drop for Handle<R> {
    fn drop(&mut self) {
        self.shared.request_stop();
    }
}

pub(crate) struct ElectionShared<R> {
    key: Key,
    name: Name,
    cell: Arc<Cell<ElectionMachine>>,
    backend: Arc<dyn LeaderElectionBackend>,
    runtime: R,
    /// Rung by stop requests, so a waiting loop turns at once.
    stop: Arc<Signal>,
    /// Who leads, told the store with each attempt to take the lead.
    details: crate::details::Details,
}

#[derive(Clone)]
struct ElectionExec(Arc<dyn LeaderElectionBackend>);

impl Execute for ElectionExec {
    fn answer_now(&self, op: &StoreOp) -> Option<Result<tenure_core::StoreReply, tenure_core::BackendError>> {
        crate::telemetry::answered_now(op, || self.0.answer_now(op))
    }

    fn execute(&self, op: StoreOp) -> Reply {
        let operation = op.name();
        crate::telemetry::timed(operation, self.0.execute(op))
    }
}

impl<R: Runtime> ElectionShared<R> {
    fn now(&self) -> Timestamp {
        self.runtime.now()
    }

    /// Starts the machine; false (with a warning) when it runs, or still stops.
    fn start(&self) -> bool {
        let mut machine = self.cell.lock();
        let now = self.now();
        // (built again in a forked child: its pid)
        machine.set_details(self.details.get());
        if machine.start(now) {
            return true;
        }
        let name = self.name.as_str();
        if machine.is_stopping() {
            tracing::warn!(election = name, "still stopping: await stop() before starting again");
        } else {
            tracing::warn!(election = name, "already running");
        }
        false
    }

    /// Stops the machine now (leadership ends at once) and wakes the loop to release.
    fn request_stop(&self) {
        self.cell.lock().stop(self.now());
        self.cell.changed.notify(usize::MAX);
        self.stop.ring();
    }

    /// A wake-up for the loop: the next release on the store, or a stop request.
    fn signal(&self) -> Wakeup {
        let stop = self.stop.ticket();
        match self.backend.wakeup(self.key.as_str()) {
            Some(released) => released.or(stop),
            None => stop,
        }
    }

    /// Drives the loop until it stops.
    async fn run(self: Arc<Self>) {
        let exec = ElectionExec(self.backend.clone());
        let signal = self.signal();
        let purpose = Loop { shared: self.clone() };
        let _ = follow(&self.runtime, &self.cell, &exec, purpose, Some(signal)).await;
    }
}

/// The election loop: runs until the machine reports it stopped.
struct Loop<R> {
    shared: Arc<ElectionShared<R>>,
}

impl<R: Runtime> Purpose<ElectionMachine> for Loop<R> {
    type Output = ();

    fn event(&mut self, event: ElectionEvent) -> Option<()> {
        (event == ElectionEvent::Stopped).then_some(())
    }

    fn reached(&mut self, machine: &ElectionMachine) -> Option<()> {
        (!machine.is_running()).then_some(())
    }

    fn woken(&mut self, machine: &mut ElectionMachine, now: Timestamp) -> Option<Wakeup> {
        let next = self.shared.signal();
        machine.wake(now);
        Some(next)
    }
}

impl<R: Runtime> LeaderElection<R> {
    /// Starts building the election `name` (settings from `GREL_LEADERELECTION_*` when unset).
    pub fn builder(name: &str, runtime: R) -> LeaderElectionBuilder<R> {
        LeaderElectionBuilder::new(name, runtime)
    }

    /// The election `name` with exactly `config`, on `backend`.
    pub fn from_config(
        name: &str,
        config: LeaderElectionConfig,
        backend: Arc<dyn LeaderElectionBackend>,
        runtime: R,
        metadata: Metadata,
    ) -> Result<Self, Error> {
        Ok(Self::assemble(&Name::new(name)?, config, backend, runtime, metadata))
    }

    pub(crate) fn assemble(
        name: &Name,
        config: LeaderElectionConfig,
        backend: Arc<dyn LeaderElectionBackend>,
        runtime: R,
        metadata: Metadata,
    ) -> Self {
        let key = Key::new(KeyKind::Leader, name);
        let token = Token::leader(config.worker());
        let mut jitter = tenure_core::SplitMix64::new(runtime.jitter_seed());
        let machine = ElectionMachine::new(key.clone(), token, config, metadata, runtime.now(), &mut jitter);
        let cell = Arc::new(Cell::new(machine));
        let name = key.name();
        let (stop, details) = (Arc::new(Signal::new()), crate::details::Details::default());
        let shared = Arc::new(ElectionShared { key, name, cell, backend, runtime, stop, details });
        Self { handle: Arc::new(Handle { shared }) }
    }

    fn shared(&self) -> &Arc<ElectionShared<R>> {
        &self.handle.shared
    }

    /// The election name.
    pub fn name(&self) -> &Name {
        &self.shared().name
    }

    /// The configuration in use.
    pub fn config(&self) -> LeaderElectionConfig {
        self.shared().cell.lock().config().clone()
    }

    /// Says what this worker leads for ("the nightly scheduler"): shown with its host, pid and
    /// program by `tenure locks` while it leads, from its next term on. 1 to 256 bytes, no
    /// control characters; `None` says nothing.
    pub fn set_purpose(&self, purpose: Option<&str>) -> Result<(), Error> {
        self.shared().details.set_purpose(purpose)?;
        let details = self.shared().details.get();
        self.shared().cell.lock().set_details(details);
        Ok(())
    }

    /// The purpose given ([`LeaderElection::set_purpose`]).
    pub fn purpose(&self) -> Option<String> {
        self.shared().details.purpose().map(|p| p.to_string())
    }

    /// Swaps the configuration for the next attempt (the error-log throttle at once); the
    /// worker cannot change. A leadership already confirmed keeps its deadline.
    pub fn reconfigure(&self, config: LeaderElectionConfig) -> Result<(), Error> {
        let mut machine = self.shared().cell.lock();
        if *machine.config() == config {
            return Ok(());
        }
        machine.reconfigure(config)
    }

    /// Starts the election loop in the background, with an attempt at once. Returns false (and
    /// does nothing) if it is already running.
    pub fn start(&self) -> bool {
        let shared = self.shared().clone();
        if !shared.start() {
            return false;
        }
        let runtime = shared.runtime.clone();
        runtime.spawn(shared.run());
        true
    }

    /// Runs the election loop in the calling task until [`LeaderElection::stop`] (grelmicro's
    /// `await election()`); returns at once if it is already running elsewhere. Dropping this
    /// future stops the election.
    pub async fn run(&self) {
        let shared = self.shared().clone();
        if !shared.start() {
            return;
        }
        shared.run().await;
    }

    /// Stops the election. Leadership ends when this is called (before the future is awaited);
    /// the loop then awaits its attempt in flight and releases the lease (bounded by
    /// `backend_timeout`), and the returned future completes once that is done.
    pub fn stop(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.shared().request_stop();
        let cell = self.shared().cell.clone();
        async move {
            loop {
                let listener = cell.changed.listen();
                if !cell.lock().is_running() {
                    return;
                }
                listener.await;
            }
        }
    }

    /// Whether the loop runs (until the release after a stop has finished).
    pub fn is_running(&self) -> bool {
        self.shared().cell.lock().is_running()
    }

    /// Whether this worker leads now. Advisory: fence writes, or use
    /// [`LeaderElection::is_leader_confirmed_within`] for work that must not overlap a successor.
    pub fn is_leader(&self) -> bool {
        self.shared().cell.lock().is_leader(self.shared().now())
    }

    /// Whether this worker leads and the store confirmed it at most `max_age` ago.
    pub fn is_leader_confirmed_within(&self, max_age: Duration) -> bool {
        self.shared().cell.lock().is_leader_confirmed_within(self.shared().now(), max_age)
    }

    /// Time since the store last confirmed this worker's leadership; `None` when not leading.
    pub fn last_confirmation_age(&self) -> Option<Duration> {
        self.shared().cell.lock().last_confirmation_age(self.shared().now())
    }

    /// While this worker leads: its term's fencing token, to write with so that a resource
    /// refuses a deposed leader's writes (higher for every term, never reset; see
    /// `LeaderRecord::fence`). `None` when not leading, or on a store that keeps no fences (a
    /// user-written one that answers none).
    pub fn fence(&self) -> Option<FencingToken> {
        let machine = self.shared().cell.lock();
        machine.fence().filter(|_| machine.is_leader(self.shared().now()))
    }

    /// The last record the store returned (who leads, since when, transitions, metadata).
    pub fn record(&self) -> Option<LeaderRecord> {
        self.shared().cell.lock().record().cloned()
    }
}

impl<R: Runtime> Clone for LeaderElection<R> {
    fn clone(&self) -> Self {
        Self { handle: self.handle.clone() }
    }
}

impl<R: Runtime> std::fmt::Debug for LeaderElection<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElection")
            .field("name", self.name())
            .field("running", &self.is_running())
            .field("leader", &self.is_leader())
            .finish()
    }
}
