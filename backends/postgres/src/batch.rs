//! Readers' calls on one name, sent together.
//!
//! grelmicro's read acquire decides under the name's transaction-scoped advisory lock, so every
//! reader of a name waits for the one before it to **commit** — a WAL flush each — and a name's
//! readers are served one flush at a time however many connections carry them. This process's
//! read acquisitions and read releases of a name are therefore gathered: while one batch of the
//! name is at the server, the calls that arrive join the next (up to 64 calls a batch), and the next goes as one statement
//! for its acquisitions (grelmicro's own `_acquire_read_v2` once per reader, in one transaction:
//! one flush for all of them) and one for its releases, pipelined on the name's connection. A
//! call that finds nothing in flight goes at once, alone; one batch of a name is at the server at
//! a time, and a batch's acquisitions run before its releases, so a release never overtakes the
//! acquisition it gives back.
//!
//! A batch is one shared future: every caller in it awaits the same one, so a caller that gives
//! up (its future dropped) leaves the others' calls running, as a call sent alone would have
//! gone on at the server.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use futures_util::FutureExt;
use futures_util::future::Shared;
use tenure_core::{BackendError, BackendErrorKind, FencingToken};

use crate::{Inner, PostgresBackend};

/// A reader's call.
#[derive(Debug)]
pub(crate) enum Call {
    /// A read acquisition (or renewal) under `token` for `micros`, keeping `details` beside a
    /// grant (a renewal sends none).
    Acquire { token: String, micros: i64, details: Option<String> },
    /// A read release under `token`.
    Release { token: String },
}

/// A call's answer: the generation read (or none, refused), or whether a release let go.
#[derive(Clone, Debug)]
pub(crate) enum Answer {
    Generation(Option<FencingToken>),
    Released(bool),
}

/// The answers of a batch, in its calls' order.
type Answers = Result<Arc<Vec<Result<Answer, BackendError>>>, BackendError>;

type Running = Shared<Pin<Box<dyn Future<Output = Answers> + Send>>>;

/// A read acquisition as sent: its call's place, token, lease µs and holder details.
pub(crate) type Acquisition = (usize, String, i64, Option<String>);

/// The sent calls of a batch: `(acquisitions, releases)`, each with its call's place.
pub(crate) type Split = (Vec<Acquisition>, Vec<(usize, String)>);

/// The names with batches under way.
#[derive(Default)]
pub(crate) struct Batches {
    names: Mutex<HashMap<String, Name>>,
}

/// The most calls in one batch; more make another.
const MOST_CALLS: usize = 64;

/// One name's batches.
struct Name {
    /// Held by the batch at the server: one at a time, in the order they were made (the turn is
    /// fair, and a batch asks for it as it is made).
    turn: Arc<tokio::sync::Mutex<()>>,
    /// The batches still taking calls, oldest first: the last takes the next call unless full.
    open: VecDeque<Open>,
    /// The number the next batch made gets.
    next: u64,
    /// Batches made and not yet finished (the entry goes when none is left).
    live: usize,
}

struct Open {
    number: u64,
    calls: Vec<Call>,
    running: Running,
}

impl Batches {
    /// Sends `call` on `name` with the calls of this process that go with it.
    pub(crate) async fn call(&self, backend: &PostgresBackend, name: &str, call: Call) -> Result<Answer, BackendError> {
        let (place, running) = self.join(backend, name, call);
        let answers = running.await?;
        // A batch answers each of its calls (`run` checks the count).
        answers.get(place).cloned().unwrap_or_else(|| Err(lost(name)))
    }

    /// Puts `call` into `name`'s open batch (making one if there is none): its place and the
    /// batch.
    fn join(&self, backend: &PostgresBackend, name: &str, call: Call) -> (usize, Running) {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = names.entry(name.to_owned()).or_insert_with(|| Name {
            turn: Arc::default(),
            open: VecDeque::new(),
            next: 0,
            live: 0,
        });
        if let Some(open) = entry.open.back_mut().filter(|open| open.calls.len() < MOST_CALLS) {
            open.calls.push(call);
            return (open.calls.len() - 1, open.running.clone());
        }
        let number = entry.next;
        entry.next += 1;
        // Weak: an open batch is kept in the backend, and must not keep the backend.
        let work = run(Arc::downgrade(&backend.inner), name.to_owned(), number, entry.turn.clone());
        let running = (Box::pin(work) as Pin<Box<dyn Future<Output = Answers> + Send>>).shared();
        entry.open.push_back(Open { number, calls: vec![call], running: running.clone() });
        entry.live += 1;
        (0, running)
    }

    /// Closes batch `number` of `name` (once its turn came): its calls.
    fn close(&self, name: &str, number: u64) -> Vec<Call> {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(entry) = names.get_mut(name) else { return Vec::new() };
        let at = entry.open.iter().position(|open| open.number == number);
        at.and_then(|at| entry.open.remove(at)).map(|open| open.calls).unwrap_or_default()
    }

    /// A batch of `name` has finished (or was given up).
    fn finished(&self, name: &str) {
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        if let Entry::Occupied(mut entry) = names.entry(name.to_owned()) {
            entry.get_mut().live = entry.get().live.saturating_sub(1);
            if entry.get().live == 0 {
                entry.remove();
            }
        }
    }
}

impl std::fmt::Debug for Batches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.names.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("Batches").field("names", &names).finish()
    }
}

/// Marks a batch finished when it ends, however it ends.
struct Finished<'a> {
    batches: &'a Batches,
    name: &'a str,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.batches.finished(self.name);
    }
}

/// A batch: waits for the name's turn, closes the batch (later calls make the next one), sends
/// its calls and answers each.
async fn run(inner: Weak<Inner>, name: String, number: u64, turn: Arc<tokio::sync::Mutex<()>>) -> Answers {
    let Some(inner) = inner.upgrade() else {
        return Err(BackendError::new(BackendErrorKind::Closed, "the PostgreSQL backend is closed"));
    };
    let backend = PostgresBackend { inner };
    let batches = &backend.inner.batches;
    let _finished = Finished { batches, name: &name };
    let _turn = turn.lock().await;
    let calls = batches.close(&name, number);
    let count = calls.len();
    let (mut acquires, mut releases): Split = (Vec::new(), Vec::new());
    for (place, call) in calls.into_iter().enumerate() {
        match call {
            Call::Acquire { token, micros, details } => acquires.push((place, token, micros, details)),
            Call::Release { token } => releases.push((place, token)),
        }
    }
    let answers = backend.send_batch(&name, acquires, releases).await?;
    if answers.len() != count {
        return Err(lost(&name));
    }
    let mut ordered: Vec<Option<Result<Answer, BackendError>>> = vec![None; count];
    for (place, answer) in answers {
        if let Some(slot) = ordered.get_mut(place) {
            *slot = Some(answer);
        }
    }
    Ok(Arc::new(ordered.into_iter().map(|a| a.unwrap_or_else(|| Err(lost(&name)))).collect()))
}

/// The error of a batch that did not answer one of its calls (a bug, never expected).
fn lost(name: &str) -> BackendError {
    BackendError::new(
        BackendErrorKind::Protocol,
        format!("a batch of read-write calls on {name} did not answer every call"),
    )
}
