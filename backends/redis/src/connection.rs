//! The connection a backend talks through: one reconnecting multiplexed connection to a server,
//! or a Redis Cluster connection that routes each call by its first key (every key of one call
//! shares the prefix's hash tag, so one slot), or a connection whose host runs its I/O
//! ([`crate::dial`]).

use std::sync::Arc;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

use crate::dial::Dialed;

#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    Dialed(Arc<Dialed>),
}

impl Connection {
    /// Subscribes to `channel`; returns once the server confirmed it.
    pub(crate) async fn subscribe(&mut self, channel: &str) -> RedisResult<()> {
        match self {
            Self::Single(c) => c.subscribe(channel).await,
            Self::Cluster(c) => c.subscribe(channel).await,
            Self::Dialed(c) => c.subscribe(channel).await,
        }
    }

    pub(crate) async fn unsubscribe(&mut self, channels: &[String]) -> RedisResult<()> {
        match self {
            Self::Single(c) => c.unsubscribe(channels).await,
            Self::Cluster(c) => c.unsubscribe(channels).await,
            Self::Dialed(c) => c.unsubscribe(channels).await,
        }
    }

    /// The `host:port` of every primary (one entry, unused, for a single server).
    pub(crate) async fn primaries(&mut self) -> RedisResult<Vec<(String, u16)>> {
        let Self::Cluster(c) = self else {
            return Ok(Vec::new());
        };
        // CLUSTER SLOTS: [[start, end, [host, port, id, ...], replicas...], ...]
        let slots: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query_async(c).await?;
        let mut primaries = Vec::new();
        for range in slots {
            let Value::Array(parts) = range else { continue };
            let Some(Value::Array(node)) = parts.get(2) else { continue };
            let host: Option<String> = node.first().and_then(|v| redis::from_redis_value_ref(v).ok());
            let port: Option<u16> = node.get(1).and_then(|v| redis::from_redis_value_ref(v).ok());
            if let (Some(host), Some(port)) = (host, port)
                && !primaries.contains(&(host.clone(), port))
            {
                primaries.push((host, port));
            }
        }
        Ok(primaries)
    }

    /// Runs `cmd` on the primary at `host:port` (a cluster), or on the server.
    pub(crate) async fn on_node(&mut self, node: Option<&(String, u16)>, cmd: Cmd) -> RedisResult<Value> {
        match (self, node) {
            (Self::Cluster(c), Some((host, port))) => {
                let routing = SingleNodeRoutingInfo::ByAddress { host: host.clone(), port: *port };
                c.route_command(cmd, RoutingInfo::SingleNode(routing)).await
            }
            (this, _) => cmd.query_async(this).await,
        }
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
            Self::Dialed(c) => c.command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Self::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Self::Dialed(c) => c.commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
            Self::Dialed(c) => c.db(),
        }
    }
}
