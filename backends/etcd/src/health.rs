//! Members that stopped answering leave the client's balancer. etcd's client spreads requests
//! over every endpoint, and a member that is frozen or cut off still accepts connections (its
//! kernel does), so without this a share of every call would wait out the command timeout on it.
//! With several endpoints, each member is probed through a client of its own every half command
//! timeout: a serializable count of one key under the store's prefix (answered by the member
//! alone, no consensus; the client's `require_leader` makes a member without a leader refuse it).
//! One that does not answer in time is taken out of the store's balancer and put back once it
//! answers again. When no member answers (an election of the cluster, a loaded host) the
//! balancer is left as it is: a member taken out stays out until it answers itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::client::{Client, ConnectOptions, Error, GetOptions};

use crate::call::tokio_handle;

/// The shortest pause between two probes of a member, whatever the command timeout.
const MIN_PERIOD: Duration = Duration::from_millis(100);
/// The longest pause between two attempts to connect a probe to a member that is down.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

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

/// Probes `endpoints` (each with its scheme, as [`crate::EtcdOptions`] writes them: the
/// balancer knows them by that form) and keeps `client`'s balancer to those that answer a read
/// of `probe_key` within `within`; nothing for a single endpoint (there is nowhere else to send
/// requests).
pub(crate) fn watch_members(
    client: Client,
    endpoints: &[String],
    connect: &ConnectOptions,
    within: Duration,
    probe_key: &str,
) -> Members {
    if endpoints.len() < 2 {
        return Members(Vec::new());
    }
    let answering: Arc<Vec<AtomicBool>> = Arc::new(endpoints.iter().map(|_| AtomicBool::new(true)).collect());
    let connect = connect.clone().with_timeout(within).with_connect_timeout(within);
    let period = (within / 2).max(MIN_PERIOD);
    let handle = tokio_handle();
    let mut tasks: Vec<_> = endpoints
        .iter()
        .enumerate()
        .map(|(i, endpoint)| {
            let probe = Probe {
                endpoint: endpoint.clone(),
                connect: connect.clone(),
                within,
                period,
                key: probe_key.to_owned(),
            };
            handle.spawn(probe.run(answering.clone(), i))
        })
        .collect();
    tasks.push(handle.spawn(balance(client, endpoints.to_vec(), period / 2, answering)));
    Members(tasks)
}

struct Probe {
    endpoint: String,
    connect: ConnectOptions,
    within: Duration,
    period: Duration,
    key: String,
}

impl Probe {
    /// Keeps `answering[i]` to whether the member answers a read within `within`.
    async fn run(self, answering: Arc<Vec<AtomicBool>>, i: usize) {
        let mut backoff = self.period;
        // Made once: its channel reconnects by itself; made again only while it cannot connect
        // (with a user, connecting logs in: not something to repeat every period).
        let mut client = None;
        loop {
            tokio::time::sleep(backoff).await;
            if client.is_none() {
                let connecting = Client::connect([self.endpoint.as_str()], self.connect.clone());
                client = tokio::time::timeout(self.within, connecting).await.ok().and_then(Result::ok);
            }
            let Some(c) = client.as_ref() else {
                answering[i].store(false, Ordering::SeqCst);
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            };
            backoff = self.period;
            let read = c.get(self.key.as_str(), Some(GetOptions::new().with_serializable().with_count_only()));
            let answered = match tokio::time::timeout(self.within, read).await {
                Ok(Ok(_)) => true,
                // Refused for a reason of its own (permissions, say): it answers.
                Ok(Err(Error::Status(status))) => !matches!(
                    status.code(),
                    tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
                ),
                Ok(Err(_)) | Err(_) => false,
            };
            answering[i].store(answered, Ordering::SeqCst);
        }
    }
}

/// Takes members that stopped answering out of `client`'s balancer and puts them back, every
/// `tick`.
async fn balance(client: Client, endpoints: Vec<String>, tick: Duration, answering: Arc<Vec<AtomicBool>>) {
    let mut out = vec![false; endpoints.len()];
    loop {
        tokio::time::sleep(tick).await;
        let now: Vec<bool> = answering.iter().map(|a| a.load(Ordering::SeqCst)).collect();
        if !now.iter().any(|a| *a) {
            // Nobody answers: no member is judged against the others.
            continue;
        }
        for (i, endpoint) in endpoints.iter().enumerate() {
            let change = match (now[i], out[i]) {
                (false, false) => client.remove_endpoint(endpoint).await.map(|()| true),
                (true, true) => client.add_endpoint(endpoint).await.map(|()| false),
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
