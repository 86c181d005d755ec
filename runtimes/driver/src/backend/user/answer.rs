//! The end of one call of a user's method: the answer, checked for its shape and range, handed
//! back to the driver from the host's thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use tenure_core::{
    BackendError, BackendErrorKind, FencingToken, LeaderRecord, PermitAnswer, RwState, SemState, StoreReply, WriteGrant,
};

use super::{Method, Shape};
use crate::host::scope;

/// The largest fencing token or generation a backend may answer (the stores keep signed 64-bit
/// counters).
const MAX_FENCE: u64 = i64::MAX as u64;

/// The end of one call, handed to the binding: the answer in its shape, or a failure.
#[derive(Debug)]
pub struct Answer {
    pub(super) slot: Arc<Slot>,
    pub(super) method: Method,
    /// The name the user's object has the method under.
    pub(super) name: &'static str,
    /// The permit count asked, for a semaphore's `acquire`.
    pub(super) asked: Option<u32>,
}

impl Answer {
    /// The method it answers.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Answers a fencing token (or none); one that is not a positive count below 2^63 is refused.
    pub fn fence(&self, fence: Option<u64>) {
        match fence {
            Some(fence) if !(1..=MAX_FENCE).contains(&fence) => self.out_of_range("a", fence),
            fence => self.reply(Shape::Fence, StoreReply::Fence(fence.map(FencingToken::new))),
        }
    }

    /// Answers a flag.
    pub fn flag(&self, flag: bool) {
        self.reply(Shape::Flag, StoreReply::Flag(flag));
    }

    /// Answers a leader record (none: no leader, for `get`); its transitions count is below 2^63.
    pub fn record(&self, record: Option<LeaderRecord>) {
        if let Some(record) = &record
            && record.transitions > MAX_FENCE
        {
            return self.wrong(format!("a record whose transitions is {}: a count below 2**63", record.transitions));
        }
        match (self.method.shape(), record) {
            (Shape::Record, Some(record)) => self.send(Ok(StoreReply::Leader(record))),
            (Shape::MaybeRecord, record) => self.send(Ok(StoreReply::MaybeLeader(record))),
            _ => self.wrong("a record"),
        }
    }

    /// Answers the generation a reader reads (0 before the first write), or none when refused.
    pub fn generation(&self, generation: Option<u64>) {
        match generation {
            Some(g) if g > MAX_FENCE => self.wrong(format!("the generation {g}: a generation is below 2**63")),
            g => self.reply(Shape::Generation, StoreReply::Fence(g.map(FencingToken::new))),
        }
    }

    /// Answers a write grant `(fencing token, poisoned)`, or none when refused.
    pub fn write(&self, grant: Option<(u64, bool)>) {
        match grant {
            Some((fence, _)) if !(1..=MAX_FENCE).contains(&fence) => self.out_of_range("a write grant's", fence),
            grant => self.reply(
                Shape::Write,
                StoreReply::Write(
                    grant.map(|(fence, poisoned)| WriteGrant { fence: FencingToken::new(fence), poisoned }),
                ),
            ),
        }
    }

    /// Answers a read-write lock's state.
    pub fn rw_state(&self, state: RwState) {
        if state.generation > MAX_FENCE {
            return self.wrong(format!("a state whose generation {} is not below 2**63", state.generation));
        }
        if state.writing && state.readers > 0 {
            return self.wrong("a state with a writer and readers at once");
        }
        if state.writing && state.generation == 0 {
            return self.wrong("a state with a writer and generation 0: a write's fencing token is at least 1");
        }
        self.reply(Shape::Rw, StoreReply::Rw(state));
    }

    /// Answers a semaphore's permit: its fencing token (none when refused) and the stored count.
    /// A permit granted under another count than the one asked is refused as unreadable (the
    /// driver then gives back what may have been granted).
    pub fn permit(&self, fence: Option<u64>, permits: u32) {
        match (fence, self.asked) {
            (Some(fence), _) if !(1..=MAX_FENCE).contains(&fence) => self.out_of_range("a permit's", fence),
            _ if permits == 0 => self.wrong("a permit count of 0: a semaphore has at least one permit"),
            (Some(_), Some(asked)) if asked != permits => self.wrong(format!(
                "a permit granted under a count of {permits} when {asked} was asked (a refusal answers the stored \
                 count with no fencing token)"
            )),
            (fence, _) => self.reply(
                Shape::Permit,
                StoreReply::Permit(PermitAnswer { fence: fence.map(FencingToken::new), permits }),
            ),
        }
    }

    /// Answers a semaphore's state.
    pub fn sem_state(&self, state: SemState) {
        if state.fence > MAX_FENCE {
            return self.wrong(format!("a state whose fence {} is not below 2**63", state.fence));
        }
        if state.permits == 0 && (state.holders > 0 || state.waiting > 0) {
            return self.wrong("a state with holders or waiters and no count (0 permits means nobody holds or waits)");
        }
        if state.holders > state.permits as usize {
            return self.wrong(format!("a state with {} holders of {} permits", state.holders, state.permits));
        }
        self.reply(Shape::Sem, StoreReply::Sem(state));
    }

    /// The call failed: `message` says how, naming the backend and the method (never the text of
    /// the host's error, which could hold a token).
    pub fn fail(&self, message: impl Into<String>) {
        self.send(Err(BackendError::new(BackendErrorKind::Other, message)));
    }

    /// The call failed with the host's error `cause` (the operation's error has it as its source).
    pub fn fail_with(&self, message: impl Into<String>, cause: impl std::error::Error + Send + Sync + 'static) {
        self.send(Err(BackendError::new(BackendErrorKind::Other, message).with_source(cause)));
    }

    /// The answer could not be read: `what` says why (the value's type, never its text).
    pub fn unreadable(&self, what: impl std::fmt::Display) {
        self.send(Err(BackendError::new(
            BackendErrorKind::Protocol,
            format!("the backend's answer does not fit: {what}"),
        )));
    }

    fn out_of_range(&self, what: &str, fence: u64) {
        self.wrong(format!("{what} fencing token {fence}: a fencing token is a positive int below 2**63"));
    }

    fn reply(&self, shape: Shape, reply: StoreReply) {
        if self.method.shape() == shape { self.send(Ok(reply)) } else { self.wrong("an answer of another call") }
    }

    fn wrong(&self, what: impl std::fmt::Display) {
        self.unreadable(format!("{} answered {what}", self.name));
    }

    /// Hands the reply to the driver; a caller waiting on this thread's loop runs at once.
    fn send(&self, reply: Result<StoreReply, BackendError>) {
        scope(|| self.slot.put(reply));
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        self.slot.close();
    }
}

/// Where one call's reply waits for the driver.
#[derive(Debug, Default)]
pub(super) struct Slot(Mutex<SlotState>);

#[derive(Debug, Default)]
struct SlotState {
    reply: Option<Result<StoreReply, BackendError>>,
    /// No reply will come (the answer was dropped, or one was taken).
    closed: bool,
    waker: Option<Waker>,
}

impl Slot {
    fn put(&self, reply: Result<StoreReply, BackendError>) {
        let waker = {
            let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if state.closed {
                return;
            }
            state.reply = Some(reply);
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    fn close(&self) {
        let waker = {
            let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The reply, or none if the answer was dropped without one.
pub(super) struct Receive(pub(super) Arc<Slot>);

impl Future for Receive {
    type Output = Option<Result<StoreReply, BackendError>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.0.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(reply) = state.reply.take() {
            return Poll::Ready(Some(reply));
        }
        if state.closed {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}
