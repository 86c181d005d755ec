//! A socket a host's loop watches: [`Watched`] (its buffers and readiness) and [`LoopStream`]
//! (the stream a store's connection reads and writes), the same on every loop; a binding gives
//! only how its loop watches ([`Watch`]).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{Home, LoopTask};
use crate::net::Socket;

/// The read buffer's capacity kept once it is empty (a burst's peak is given back).
const KEPT_BUFFER: usize = 16 * 1024;

/// The socket of a store's TCP connection that `home`'s loop runs: `stream` made non-blocking and
/// watched there (`watch` gives the binding's [`Watch`] of it), the connection's driver a task of
/// the loop, and the connection usable while `alive` says the loop is.
pub fn loop_socket<H: Home, W: Watch>(
    home: Arc<H>,
    stream: TcpStream,
    watch: impl FnOnce(&Arc<H>, TcpStream) -> LoopStream<W>,
    alive: impl Fn(&H) -> bool + Send + Sync + 'static,
) -> io::Result<Socket> {
    stream.set_nonblocking(true)?;
    let stream = watch(&home, stream);
    let spawn_home: Arc<dyn Home> = home.clone();
    Ok(Socket::new(stream, move |driver| LoopTask::spawn(spawn_home, driver), move || alive(&home)))
}

/// A non-blocking TCP socket whose readiness a loop watches (see the module): the binding's
/// readiness callbacks call [`Self::read_ready`] and [`Self::write_ready`], its stream's
/// `AsyncRead` and `AsyncWrite` call [`Self::poll_read`] and [`Self::poll_write`].
#[derive(Debug)]
pub struct Watched {
    socket: TcpStream,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    buffer: Vec<u8>,
    start: usize,
    eof: bool,
    error: Option<io::Error>,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

impl Watched {
    /// Watches `socket`, which must be non-blocking.
    pub fn new(socket: TcpStream) -> Self {
        Self { socket, state: Mutex::new(State::default()) }
    }

    /// The socket.
    pub fn socket(&self) -> &TcpStream {
        &self.socket
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads what arrived into the buffer and wakes the reader; true once the stream ended or
    /// failed (the loop stops watching it then).
    pub fn read_ready(&self) -> bool {
        let mut state = self.state();
        let mut chunk = [0u8; 16 * 1024];
        let stop = loop {
            match (&self.socket).read(&mut chunk) {
                Ok(0) => {
                    state.eof = true;
                    break true;
                }
                Ok(n) => state.buffer.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    state.error = Some(e);
                    break true;
                }
            }
        };
        let reader = state.reader.take();
        let writer = if stop { state.writer.take() } else { None };
        drop(state);
        [reader, writer].into_iter().flatten().for_each(Waker::wake);
        stop
    }

    /// The socket is writable again: wakes the writer.
    pub fn write_ready(&self) {
        let writer = self.state().writer.take();
        if let Some(writer) = writer {
            writer.wake();
        }
    }

    /// Watching failed: every read and write from now on fails with `error`.
    pub fn fail(&self, error: io::Error) {
        let mut state = self.state();
        state.error.get_or_insert(error);
        let wakers = [state.reader.take(), state.writer.take()];
        drop(state);
        wakers.into_iter().flatten().for_each(Waker::wake);
    }

    fn failure(state: &State) -> Option<io::Error> {
        state.error.as_ref().map(|e| io::Error::new(e.kind(), e.to_string()))
    }

    /// `AsyncRead::poll_read`: from the buffer, else pending until the loop reads more.
    pub fn poll_read(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut state = self.state();
        if state.start < state.buffer.len() {
            let n = buf.remaining().min(state.buffer.len() - state.start);
            let start = state.start;
            buf.put_slice(&state.buffer[start..start + n]);
            state.start += n;
            if state.start == state.buffer.len() {
                state.buffer.clear();
                state.buffer.shrink_to(KEPT_BUFFER);
                state.start = 0;
            }
            return Poll::Ready(Ok(()));
        }
        if let Some(e) = Self::failure(&state) {
            return Poll::Ready(Err(e));
        }
        if state.eof {
            return Poll::Ready(Ok(()));
        }
        state.reader = Some(cx.waker().clone());
        Poll::Pending
    }

    /// `AsyncWrite::poll_write`: straight to the socket; when it is full, pending after
    /// `watch_writable` asked the loop to watch for room.
    pub fn poll_write(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        watch_writable: impl FnOnce(),
    ) -> Poll<io::Result<usize>> {
        loop {
            match (&self.socket).write(buf) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        let mut state = self.state();
        if let Some(e) = Self::failure(&state) {
            return Poll::Ready(Err(e));
        }
        state.writer = Some(cx.waker().clone());
        drop(state);
        watch_writable();
        Poll::Pending
    }
}

/// How a binding's loop watches a [`Watched`] socket. Called from any thread: each posts to the
/// loop's thread what must run there.
pub trait Watch: Send + Sync + Unpin + 'static {
    /// The socket and its buffers.
    fn watched(&self) -> &Watched;

    /// A write found the socket full: watch it for room to write too, until the loop finds some
    /// (its callback then calls [`Watched::write_ready`]).
    fn want_write(&self);

    /// The stream is gone: stop watching; the descriptor must stay open until the loop let go
    /// of it, so that a new socket reusing its number is never watched by mistake.
    fn stop(&self);
}

/// The stream of a socket a host's loop watches: reads come from the buffer the loop's callback
/// fills, writes go straight to the (non-blocking) socket, from whichever thread writes.
#[derive(Debug)]
pub struct LoopStream<W: Watch>(W);

impl<W: Watch> LoopStream<W> {
    /// The stream of the socket `watch` watches.
    pub fn new(watch: W) -> Self {
        Self(watch)
    }
}

impl<W: Watch> AsyncRead for LoopStream<W> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        self.0.watched().poll_read(cx, buf)
    }
}

impl<W: Watch> AsyncWrite for LoopStream<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.0.watched().poll_write(cx, buf, || self.0.want_write())
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let _ = self.0.watched().socket().shutdown(Shutdown::Write);
        Poll::Ready(Ok(()))
    }
}

impl<W: Watch> Drop for LoopStream<W> {
    /// Shuts the socket down at once; the loop stops watching it ([`Watch::stop`]).
    fn drop(&mut self) {
        let _ = self.0.watched().socket().shutdown(Shutdown::Both);
        self.0.stop();
    }
}
