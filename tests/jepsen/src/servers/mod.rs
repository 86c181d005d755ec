//! The servers the stores' own fault tests start, compiled in from their files (not copied):
//! `server` and `sentinel` (Redis; the sentinel module names its sibling `server`), `postgres`,
//! `etcd` (with its `cluster`).

#![allow(dead_code, unreachable_pub)]

#[path = "../../../../backends/redis/tests/common/server.rs"]
pub mod server;

#[path = "../../../../backends/redis/tests/common/sentinel.rs"]
pub mod sentinel;

#[path = "../../../../backends/postgres/tests/common/server.rs"]
pub mod postgres;

#[path = "../../../../backends/etcd/tests/common/mod.rs"]
pub mod etcd;
