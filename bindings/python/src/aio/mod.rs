//! Rust futures and sockets on the asyncio event loop's own thread ([`tenure::host`], as the
//! npm package does on libuv).
//!
//! - [`LoopTask`] runs a future on an event loop: only that loop's thread polls it. A wake-up on
//!   that thread during a poll queues it to run when the poll ends ([`task::scope`]); any other
//!   wake-up posts it to the loop's [`task::Inbox`] — a queue and a socket the loop watches —
//!   without touching the interpreter, so a thread that wakes a task while holding a lock never
//!   waits for the interpreter lock.
//! - [`LoopDial`] opens a Redis backend's sockets so that the loop's selector watches them and
//!   the connection's driver is a [`LoopTask`]: a command made on the loop is written, answered
//!   and completed on the loop's thread, with no thread hop either way (grelmicro's redis-py
//!   works so too). Timers still run on the package's tokio runtime.

mod stream;
mod task;

pub(crate) use stream::LoopDial;
pub(crate) use task::{Inbox, start};
pub(crate) use tenure::host::{LoopTask, in_scope, panic_message};
