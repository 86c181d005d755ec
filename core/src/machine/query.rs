//! [`Query`]: a single bounded store question (`locked()`, `owned()`, a read-write lock's
//! `state()`).

use std::time::Duration;

use super::lock::{Access, unexpected};
use crate::error::{BackendError, Error};
use crate::ids::{Key, KeyKind, OpId, Token};
use crate::store::{RwState, SemState, StoreOp, StoreReply, StoreRequest};
use crate::time::Timestamp;

/// Which question a [`Query`] asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryKind {
    /// Is the lock held by anyone?
    Locked,
    /// Is the lock held by this token?
    Owned,
    /// What holds a read-write lock or a semaphore (answers [`RwState`] or [`SemState`]).
    State,
}

/// One store question with its deadline and error mapping: a failure of `locked()` is
/// [`Error::LockedCheck`], of `owned()` and of a read-write lock's `state()`
/// [`Error::OwnedCheck`] (grelmicro's `LockOwnedCheckError`).
#[derive(Clone, Debug)]
pub struct Query {
    kind: QueryKind,
    key: Key,
    id: OpId,
    deadline: Timestamp,
    timeout: Duration,
    done: bool,
}

impl Query {
    /// Asks whether `key` is held; returns the query and the request to run.
    pub fn locked(key: &Key, now: Timestamp, timeout: Duration) -> (Self, StoreRequest) {
        Self::new(QueryKind::Locked, StoreOp::LockLocked { key: key.clone() }, now, timeout)
    }

    /// Asks whether `token` holds `key`.
    pub fn owned(key: &Key, token: &Token, now: Timestamp, timeout: Duration) -> (Self, StoreRequest) {
        Self::new(QueryKind::Owned, StoreOp::LockOwned { key: key.clone(), token: token.clone() }, now, timeout)
    }

    /// Asks whether `token` holds `access` on `key` (a lock, or a side of a read-write lock).
    pub fn owned_as(
        key: &Key,
        token: &Token,
        access: Access,
        now: Timestamp,
        timeout: Duration,
    ) -> (Self, StoreRequest) {
        let (key, token) = (key.clone(), token.clone());
        let op = match access {
            Access::Exclusive => StoreOp::LockOwned { key, token },
            Access::Read => StoreOp::RwOwnedRead { key, token },
            Access::Write => StoreOp::RwOwnedWrite { key, token },
            Access::Permit(_) => StoreOp::SemOwned { key, token },
        };
        Self::new(QueryKind::Owned, op, now, timeout)
    }

    /// Asks what holds the read-write lock or the semaphore `key` (answers [`RwState`] or
    /// [`SemState`]).
    pub fn state(key: &Key, now: Timestamp, timeout: Duration) -> (Self, StoreRequest) {
        let op = match key.kind() {
            KeyKind::Semaphore => StoreOp::SemState { key: key.clone() },
            _ => StoreOp::RwState { key: key.clone() },
        };
        Self::new(QueryKind::State, op, now, timeout)
    }

    fn new(kind: QueryKind, op: StoreOp, now: Timestamp, timeout: Duration) -> (Self, StoreRequest) {
        let id = OpId::new(1);
        let deadline = now + timeout;
        let query = Self { kind, key: op.key().clone(), id, deadline, timeout, done: false };
        (query, StoreRequest { id, op, deadline })
    }

    /// Which question this is.
    pub fn kind(&self) -> QueryKind {
        self.kind
    }

    /// When to give up (call [`Self::handle_timeout`]).
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }

    /// The yes/no answer, the first time a reply for this query arrives; `None` for anything
    /// else.
    pub fn handle_reply(&mut self, id: OpId, reply: Result<StoreReply, BackendError>) -> Option<Result<bool, Error>> {
        let answer = self.handle_answer(id, reply)?;
        Some(answer.and_then(|reply| match reply {
            StoreReply::Flag(answer) => Ok(answer),
            other => Err(self.error(unexpected("the check", &other))),
        }))
    }

    /// The answer in the shape this question expects (a flag, or a read-write lock's state),
    /// the first time a reply for this query arrives; `None` for anything else.
    pub fn handle_answer(
        &mut self,
        id: OpId,
        reply: Result<StoreReply, BackendError>,
    ) -> Option<Result<StoreReply, Error>> {
        if self.done || id != self.id {
            return None;
        }
        self.done = true;
        Some(match (self.kind, reply) {
            (QueryKind::Locked | QueryKind::Owned, Ok(reply @ StoreReply::Flag(_)))
            | (QueryKind::State, Ok(reply @ (StoreReply::Rw(_) | StoreReply::Sem(_)))) => Ok(reply),
            (_, Ok(other)) => Err(self.error(unexpected("the check", &other))),
            (_, Err(cause)) => Err(self.error(cause)),
        })
    }

    /// The state a [`Query::state`] answer carries.
    pub fn state_of(reply: &StoreReply) -> Option<RwState> {
        if let StoreReply::Rw(state) = reply { Some(*state) } else { None }
    }

    /// The state a [`Query::state`] answer about a semaphore carries.
    pub fn sem_state_of(reply: &StoreReply) -> Option<SemState> {
        if let StoreReply::Sem(state) = reply { Some(*state) } else { None }
    }

    /// The timeout error once `now` has reached the deadline and no answer came.
    pub fn handle_timeout(&mut self, now: Timestamp) -> Option<Result<bool, Error>> {
        if now < self.deadline {
            return None;
        }
        self.handle_reply(self.id, Err(BackendError::timeout(self.timeout)))
    }

    /// [`Query::handle_timeout`] in the shape of [`Query::handle_answer`].
    pub fn handle_timeout_answer(&mut self, now: Timestamp) -> Option<Result<StoreReply, Error>> {
        if now < self.deadline {
            return None;
        }
        self.handle_answer(self.id, Err(BackendError::timeout(self.timeout)))
    }

    fn error(&self, cause: BackendError) -> Error {
        let name = self.key.name_str().to_owned();
        match self.kind {
            QueryKind::Locked => Error::LockedCheck { name, cause },
            QueryKind::Owned | QueryKind::State => Error::OwnedCheck { name, cause },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BackendErrorKind;
    use crate::ids::Name;

    fn key() -> Key {
        Key::new(KeyKind::Lock, &Name::new("cart").expect("valid"))
    }

    #[test]
    fn answers_once_and_maps_failures_to_the_check_error() {
        let now = Timestamp::from_nanos(10);
        let (mut q, request) = Query::locked(&key(), now, Duration::from_millis(5));
        assert_eq!(request.op, StoreOp::LockLocked { key: key() });
        assert_eq!(q.handle_reply(OpId::new(9), Ok(StoreReply::Flag(true))), None, "not ours");
        assert_eq!(q.handle_reply(request.id, Ok(StoreReply::Flag(true))), Some(Ok(true)));
        assert_eq!(q.handle_reply(request.id, Ok(StoreReply::Flag(false))), None, "a duplicate");

        let token = Token::new("w:task:1.a").expect("valid");
        let (mut q, request) = Query::owned(&key(), &token, now, Duration::from_millis(5));
        let down = Err(BackendError::new(BackendErrorKind::Unavailable, "down"));
        let answer = q.handle_reply(request.id, down);
        assert!(matches!(answer, Some(Err(Error::OwnedCheck { ref name, .. })) if name == "cart"));
    }

    #[test]
    fn read_write_questions_ask_their_side_and_a_state_is_answered_in_its_shape() {
        let now = Timestamp::from_nanos(10);
        let rw = Key::new(KeyKind::ReadWriteLock, &Name::new("doc").expect("valid"));
        let token = Token::new("w:task:1.a").expect("valid");
        let (_, request) = Query::owned_as(&rw, &token, Access::Write, now, Duration::from_millis(5));
        assert_eq!(request.op, StoreOp::RwOwnedWrite { key: rw.clone(), token: token.clone() });
        let (_, request) = Query::owned_as(&rw, &token, Access::Read, now, Duration::from_millis(5));
        assert_eq!(request.op, StoreOp::RwOwnedRead { key: rw.clone(), token });
        let (mut q, request) = Query::state(&rw, now, Duration::from_millis(5));
        let state = RwState { generation: 3, writing: false, readers: 2, waiting_writers: 1 };
        let answer = q.handle_answer(request.id, Ok(StoreReply::Rw(state))).expect("answered").expect("a state");
        assert_eq!(Query::state_of(&answer), Some(state));
        let (mut q, request) = Query::state(&rw, now, Duration::from_millis(5));
        let wrong = q.handle_answer(request.id, Ok(StoreReply::Flag(true)));
        assert!(matches!(wrong, Some(Err(Error::OwnedCheck { ref name, .. })) if name == "doc"));
        let (mut q, _) = Query::state(&rw, now, Duration::from_millis(5));
        let late = q.handle_timeout_answer(q.deadline());
        assert!(
            matches!(late, Some(Err(Error::OwnedCheck { ref cause, .. })) if cause.kind() == BackendErrorKind::Timeout)
        );
    }

    #[test]
    fn gives_up_at_the_deadline_with_a_timeout() {
        let now = Timestamp::from_nanos(10);
        let (mut q, _request) = Query::locked(&key(), now, Duration::from_millis(5));
        assert_eq!(q.handle_timeout(now + Duration::from_millis(4)), None);
        let answer = q.handle_timeout(q.deadline());
        assert!(
            matches!(answer, Some(Err(Error::LockedCheck { ref cause, .. })) if cause.kind() == BackendErrorKind::Timeout)
        );
        assert_eq!(q.handle_timeout(q.deadline()), None, "answered once");
    }
}
