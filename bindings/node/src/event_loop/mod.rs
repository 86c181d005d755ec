//! Rust futures and sockets on a JavaScript thread's own event loop ([`tenure::host`], as the
//! Python package does on asyncio).
//!
//! - A call's future is a [`LoopTask`] of the calling JavaScript thread: only that thread polls
//!   it; other threads wake it through the thread's [`Inbox`] — a queue and a libuv async handle.
//! - [`JsDial`] opens a network store's sockets so that the loop watches them (a libuv poll
//!   handle) and the connection's reader is a [`LoopTask`]: a request made on the JavaScript
//!   thread is written, answered and its promise settled on that thread, with no thread hop
//!   either way (ioredis works so too). Timers still run on the addon's tokio runtime.

mod inbox;
mod stream;
mod uv;

pub(crate) use inbox::Inbox;
pub(crate) use stream::JsDial;
pub(crate) use tenure::host::{LoopTask, scope};
