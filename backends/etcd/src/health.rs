//! Members that stopped answering leave the client's balancer. etcd's client spreads requests
//! over every endpoint, and a member that is frozen or cut off still accepts connections (its
//! kernel does), so without this a share of every call would wait out the command timeout on it.
//! With several endpoints, each member is probed through a client of its own (a linearizable
//! read, which also needs the member to see a leader) every half probe period; one that fails is
//! taken out of the store's balancer and put back once it answers again. The last answering
//! member is never taken out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};

use crate::call::tokio_handle;

/// Probing tasks, stopped when dropped.
pub(crate) struct Members(Vec<tokio::task::JoinHandle<()>>);

impl Members {
    pub(crate) fn stop(&self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Probes `endpoints` and keeps `client`'s balancer to those that answer within `within`;
/// nothing for a single endpoint (there is nowhere else to send requests).
pub(crate) fn watch_members(
    client: Client,
    endpoints: &[String],
    connect: &ConnectOptions,
    within: Duration,
) -> Members {
    if endpoints.len() < 2 {
        return Members(Vec::new());
    }
    let answering: Arc<Vec<AtomicBool>> = Arc::new(endpoints.iter().map(|_| AtomicBool::new(true)).collect());
    let connect = connect.clone().with_timeout(within).with_connect_timeout(within);
    let handle = tokio_handle();
    let mut tasks: Vec<_> = endpoints
        .iter()
        .enumerate()
        .map(|(i, endpoint)| handle.spawn(probe(endpoint.clone(), connect.clone(), within, answering.clone(), i)))
        .collect();
    tasks.push(handle.spawn(balance(client, endpoints.to_vec(), within, answering)));
    Members(tasks)
}

/// Keeps `answering[i]` to whether `endpoint` answers a read within `within`.
async fn probe(endpoint: String, connect: ConnectOptions, within: Duration, answering: Arc<Vec<AtomicBool>>, i: usize) {
    let mut client: Option<Client> = None;
    loop {
        tokio::time::sleep(within / 2).await;
        if client.is_none() {
            let connecting = Client::connect([endpoint.as_str()], Some(connect.clone()));
            client = tokio::time::timeout(within, connecting).await.ok().and_then(Result::ok);
        }
        let ok = match client.as_mut() {
            Some(c) => matches!(tokio::time::timeout(within, c.get("tenure:probe", None)).await, Ok(Ok(_))),
            None => false,
        };
        if !ok {
            client = None;
        }
        answering[i].store(ok, Ordering::SeqCst);
    }
}

/// Takes members that stopped answering out of `client`'s balancer and puts them back.
async fn balance(client: Client, endpoints: Vec<String>, within: Duration, answering: Arc<Vec<AtomicBool>>) {
    let mut out = vec![false; endpoints.len()];
    loop {
        tokio::time::sleep(within / 4).await;
        let now: Vec<bool> = answering.iter().map(|a| a.load(Ordering::SeqCst)).collect();
        let any = now.iter().any(|a| *a);
        for (i, endpoint) in endpoints.iter().enumerate() {
            let change = match (now[i], out[i]) {
                (false, false) if any => client.remove_endpoint(endpoint).await.map(|()| true),
                (true, true) => client.add_endpoint(endpoint).await.map(|()| false),
                // Every member silent: all stay, so the first to answer again serves at once.
                (false, true) if !any => client.add_endpoint(endpoint).await.map(|()| false),
                _ => continue,
            };
            match change {
                Ok(taken_out) => {
                    out[i] = taken_out;
                    let what = if taken_out { "stopped answering: requests go to the others" } else { "serves again" };
                    tracing::info!(endpoint, "etcd: a member {what}");
                }
                Err(e) => tracing::debug!(endpoint, error = %e, "etcd: the balancer did not take the change"),
            }
        }
    }
}
