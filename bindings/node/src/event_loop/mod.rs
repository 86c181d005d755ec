//! Rust futures and sockets on a JavaScript thread's own event loop.
//!
//! - [`LoopTask`] runs a future on a JavaScript thread: only that thread polls it. A wake-up on
//!   that thread during a poll queues it to run when the poll ends ([`task::scope`]); any other
//!   wake-up posts it to the thread's [`Inbox`] — a queue and a libuv async handle.
//! - [`JsDial`] opens a network store's sockets so that the loop watches them (a libuv poll
//!   handle) and the connection's reader is a [`LoopTask`]: a request made on the JavaScript
//!   thread is written, answered and its promise settled on that thread, with no thread hop
//!   either way (ioredis works so too). Timers still run on the addon's tokio runtime.
//!
//! The Python package does the same on asyncio (`bindings/python/src/aio`).

mod inbox;
mod stream;
mod task;
mod uv;

pub(crate) use inbox::Inbox;
pub(crate) use stream::JsDial;
pub(crate) use task::{LoopTask, scope};
