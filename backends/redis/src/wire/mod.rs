//! One RESP3 connection whose callers do its I/O.
//!
//! A command's future writes its request and reads the socket itself, in its own task: a task
//! running commands one after another costs one write and one read per command, with no hop to
//! a connection task and no wake-up in between (the redis crate's multiplexed connection hands
//! every request to a driver task and every reply back, which on a multi-thread runtime is two
//! thread hops per command).
//!
//! Many tasks share it: requests are written in order, replies come back in that order, and
//! whoever reads hands each reply to the request it answers and wakes that request's task. A
//! socket wakes only the last task that polled it, so whenever a reader leaves (answered,
//! dropped) the socket is polled once more on behalf of the next one waiting ([`State::rearm`]).
//! While anything is subscribed, a listener task ([`Wire::listen`]) is that next one when no
//! request waits, so published messages are read as they arrive.
//!
//! A request dropped before its reply keeps its place (its reply is read and discarded), so
//! replies never shift onto the wrong request. A read error or the end of the stream breaks the
//! connection: every waiting request fails as dropped, the push handler is told (a
//! disconnection), and the owner dials a new connection.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};

use redis::{PushInfo, PushKind, RedisError, RedisResult, Value};
use tenure::net::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::frame;

/// Where a connection's pushes go (published messages, and its disconnection).
pub(crate) type Pushes = Arc<dyn Fn(PushInfo) -> Result<(), ()> + Send + Sync>;

/// How many bytes a read asks for at least.
const READ_CHUNK: usize = 4096;
/// The read buffer's size kept once it is empty.
const KEPT_BUFFER: usize = 64 * 1024;

/// A connection (see the module).
pub(crate) struct Wire {
    state: Mutex<State>,
}

struct State {
    stream: Box<dyn Stream>,
    pushes: Pushes,
    /// Requests not yet written.
    out: Vec<u8>,
    /// The read buffer (zeroed once, reused): its first `filled` bytes are read but not yet
    /// a whole reply.
    input: Vec<u8>,
    filled: usize,
    /// Requests written or queued, oldest first: the next reply answers the front one.
    waiting: VecDeque<Waiting>,
    /// Answers not yet taken by their request.
    answered: Vec<(u64, RedisResult<Vec<Value>>)>,
    next_id: u64,
    /// Why the connection broke, once it did.
    broken: Option<(io::ErrorKind, String)>,
    /// Set once anything was subscribed: the listener then reads when no request does.
    subscribed: bool,
    listener: Option<Waker>,
}

struct Waiting {
    id: u64,
    /// Replies still to come.
    owed: usize,
    /// The replies come as subscription confirmations (pushes); an error reply ends them.
    confirmations: bool,
    values: Vec<Value>,
    waker: Option<Waker>,
    /// Its future was dropped: its replies are read and discarded.
    abandoned: bool,
}

impl Wire {
    /// A connection on `stream`, whose pushes go to `pushes`.
    pub(crate) fn new(stream: Box<dyn Stream>, pushes: Pushes) -> Arc<Self> {
        let state = State {
            stream,
            pushes,
            out: Vec::with_capacity(256),
            input: vec![0; READ_CHUNK],
            filled: 0,
            waiting: VecDeque::new(),
            answered: Vec::new(),
            next_id: 0,
            broken: None,
            subscribed: false,
            listener: None,
        };
        Arc::new(Self { state: Mutex::new(state) })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the connection broke (read error, end of stream).
    pub(crate) fn is_broken(&self) -> bool {
        self.state().broken.is_some()
    }

    /// Breaks the connection on purpose (its server is no longer the one to talk to): every
    /// waiting request fails, the listener ends, and the next call dials again.
    pub(crate) fn abandon(&self, why: &str) {
        let mut state = self.state();
        if state.broken.is_none() {
            state.fail(&io::Error::new(io::ErrorKind::ConnectionAborted, why.to_owned()));
        }
    }

    /// Sends the request `write` packs, and waits for its `replies` replies (subscription
    /// confirmations when `confirmations`).
    pub(crate) fn request<W: FnOnce(&mut Vec<u8>)>(
        &self,
        write: W,
        replies: usize,
        confirmations: bool,
    ) -> Request<'_, W> {
        Request { wire: self, stage: Stage::Unsent(write), replies, confirmations }
    }

    /// Marks the connection as carrying subscriptions: from now on the listener reads pushes
    /// whenever no request does.
    pub(crate) fn subscribed(&self) {
        self.state().subscribed = true;
    }

    /// The listener: reads pushes while nobody else does, until the connection breaks or is
    /// dropped. It holds the connection weakly, so dropping every handle ends it.
    pub(crate) fn listen(this: &Arc<Self>) -> impl Future<Output = ()> + Send + 'static {
        let wire: Weak<Self> = Arc::downgrade(this);
        std::future::poll_fn(move |cx| {
            let Some(wire) = wire.upgrade() else {
                return Poll::Ready(());
            };
            let mut state = wire.state();
            if state.broken.is_some() {
                return Poll::Ready(());
            }
            state.listener = Some(cx.waker().clone());
            if state.subscribed && !state.waiting.iter().any(|w| w.waker.is_some()) {
                state.pump(cx, None);
            }
            Poll::Pending
        })
    }
}

impl Drop for Wire {
    /// Lets the listener see that the connection is gone.
    fn drop(&mut self) {
        let listener = self.state().listener.take();
        if let Some(listener) = listener {
            listener.wake();
        }
    }
}

/// A request's reply (see [`Wire::request`]).
pub(crate) struct Request<'a, W> {
    wire: &'a Wire,
    stage: Stage<W>,
    replies: usize,
    confirmations: bool,
}

enum Stage<W> {
    /// Not sent yet: packs the request.
    Unsent(W),
    /// Sent (or queued) as this id.
    Sent(u64),
    Answered,
}

impl<W: FnOnce(&mut Vec<u8>) + Unpin> Future for Request<'_, W> {
    type Output = RedisResult<Vec<Value>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut state = this.wire.state();
        let id = match std::mem::replace(&mut this.stage, Stage::Answered) {
            Stage::Sent(id) => id,
            Stage::Answered => {
                return Poll::Ready(Err(dropped(&(io::ErrorKind::Other, "polled after its answer".into()))));
            }
            Stage::Unsent(write) => {
                if let Some(broken) = &state.broken {
                    return Poll::Ready(Err(dropped(broken)));
                }
                let id = state.next_id;
                state.next_id += 1;
                write(&mut state.out);
                state.waiting.push_back(Waiting {
                    id,
                    owed: this.replies,
                    confirmations: this.confirmations,
                    values: Vec::with_capacity(this.replies.min(8)),
                    waker: None,
                    abandoned: false,
                });
                id
            }
        };
        this.stage = Stage::Sent(id);
        if state.answered.iter().all(|(answered, _)| *answered != id) {
            state.pump(cx, Some(id));
        }
        if let Some(at) = state.answered.iter().position(|(answered, _)| *answered == id) {
            let (_, answer) = state.answered.swap_remove(at);
            this.stage = Stage::Answered;
            state.rearm();
            return Poll::Ready(answer);
        }
        if let Some(waiting) = state.waiting.iter_mut().find(|w| w.id == id) {
            waiting.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<W> Drop for Request<'_, W> {
    /// A request dropped before its answer keeps its place; its answer is discarded.
    fn drop(&mut self) {
        let Stage::Sent(id) = self.stage else { return };
        let mut state = self.wire.state();
        state.answered.retain(|(answered, _)| *answered != id);
        if let Some(waiting) = state.waiting.iter_mut().find(|w| w.id == id) {
            waiting.abandoned = true;
            waiting.waker = None;
        }
        state.rearm();
    }
}

impl State {
    /// Writes what is queued and reads what arrived, handing out every whole reply; stops once
    /// `until` is answered or the socket has nothing more (it then wakes `cx` when it has).
    fn pump(&mut self, cx: &mut Context<'_>, until: Option<u64>) {
        if self.broken.is_some() {
            return;
        }
        if let Err(e) = self.flush(cx) {
            return self.fail(&e);
        }
        loop {
            if until.is_some_and(|id| self.answered.iter().any(|(answered, _)| *answered == id)) {
                return;
            }
            if self.input.len() - self.filled < READ_CHUNK {
                let grown = self.input.len() * 2;
                self.input.resize(grown, 0);
            }
            let mut buf = ReadBuf::new(&mut self.input[self.filled..]);
            let polled = Pin::new(&mut self.stream).poll_read(cx, &mut buf);
            let read = buf.filled().len();
            self.filled += read;
            match polled {
                Poll::Pending => return,
                Poll::Ready(Err(e)) => return self.fail(&e),
                Poll::Ready(Ok(())) if read == 0 => {
                    return self
                        .fail(&io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
                }
                Poll::Ready(Ok(())) => {
                    if let Err(e) = self.replies() {
                        return self.fail(&e);
                    }
                }
            }
        }
    }

    /// Writes the queued requests, as far as the socket takes them.
    fn flush(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let mut wrote = false;
        while !self.out.is_empty() {
            match Pin::new(&mut self.stream).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Poll::Ready(Ok(n)) => {
                    self.out.drain(..n);
                    wrote = true;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => return Ok(()),
            }
        }
        if wrote && let Poll::Ready(Err(e)) = Pin::new(&mut self.stream).poll_flush(cx) {
            return Err(e);
        }
        Ok(())
    }

    /// Hands out every whole reply in the input.
    fn replies(&mut self) -> io::Result<()> {
        let mut start = 0;
        while let Some(len) = frame::complete(&self.input[start..self.filled]).map_err(|e| invalid(e.0))? {
            let reply = &self.input[start..start + len];
            let value = match frame::simple(reply) {
                Some(value) => value,
                None => redis::parse_redis_value(reply)
                    .map_err(|e| invalid(format!("the server's reply cannot be read: {e}")))?,
            };
            start += len;
            self.deliver(value)?;
        }
        self.input.copy_within(start..self.filled, 0);
        self.filled -= start;
        if self.filled == 0 && self.input.len() > KEPT_BUFFER {
            // A burst's peak is given back.
            self.input = vec![0; READ_CHUNK];
        }
        Ok(())
    }

    fn deliver(&mut self, value: Value) -> io::Result<()> {
        let confirming = self.waiting.front().is_some_and(|w| w.confirmations);
        let value = match value {
            Value::Push { kind, data } if !(confirming && is_confirmation(&kind)) => {
                let _ = (self.pushes)(PushInfo { kind, data });
                return Ok(());
            }
            value => value,
        };
        let Some(front) = self.waiting.front_mut() else {
            return Err(invalid("the server sent a reply nobody asked for".into()));
        };
        let ends = front.confirmations && matches!(value, Value::ServerError(_));
        front.values.push(value);
        front.owed = front.owed.saturating_sub(1);
        if front.owed > 0 && !ends {
            return Ok(());
        }
        let Some(done) = self.waiting.pop_front() else { return Ok(()) };
        if !done.abandoned {
            self.answered.push((done.id, Ok(done.values)));
            if let Some(waker) = done.waker {
                waker.wake();
            }
        }
        Ok(())
    }

    /// Breaks the connection: every waiting request fails, the push handler hears of it.
    fn fail(&mut self, e: &io::Error) {
        let broken = (e.kind(), e.to_string());
        for waiting in std::mem::take(&mut self.waiting) {
            if !waiting.abandoned {
                self.answered.push((waiting.id, Err(dropped(&broken))));
                if let Some(waker) = waiting.waker {
                    waker.wake();
                }
            }
        }
        self.broken = Some(broken);
        self.out.clear();
        self.filled = 0;
        let _ = (self.pushes)(PushInfo { kind: PushKind::Disconnection, data: Vec::new() });
        if let Some(listener) = self.listener.take() {
            listener.wake();
        }
    }

    /// After a reader left: polls the socket on behalf of the next one that must hear from it
    /// (the oldest request waiting, else the listener), so the socket wakes someone.
    fn rearm(&mut self) {
        let next = self.waiting.iter().find_map(|w| w.waker.clone());
        let next = next.or_else(|| self.subscribed.then(|| self.listener.clone()).flatten());
        if let Some(waker) = next {
            self.pump(&mut Context::from_waker(&waker), None);
        }
    }
}

fn is_confirmation(kind: &PushKind) -> bool {
    matches!(kind, PushKind::Subscribe | PushKind::Unsubscribe | PushKind::PSubscribe | PushKind::PUnsubscribe)
}

fn invalid(text: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, text)
}

/// The error of a request on a broken connection: a dropped connection, as the redis crate
/// reports one (so its checks — [`RedisError::is_connection_dropped`] — hold).
fn dropped((kind, text): &(io::ErrorKind, String)) -> RedisError {
    let kind = match kind {
        io::ErrorKind::InvalidData => io::ErrorKind::ConnectionAborted,
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => *kind,
        _ => io::ErrorKind::UnexpectedEof,
    };
    RedisError::from(io::Error::new(kind, format!("the connection to Redis broke: {text}")))
}

#[cfg(test)]
mod tests;
