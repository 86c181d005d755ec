//! The two streaming calls the store makes: one lease refresh on a stream of its own, and the
//! watch of a prefix's deletions.

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{Error, Intercepted};
use crate::pb::etcdserverpb as rpc;
use crate::pb::mvccpb::Event;
use crate::pb::mvccpb::event::EventType;
use rpc::watch_create_request::FilterType;
use rpc::watch_request::RequestUnion;

/// Refreshes lease `id` once: one request on a stream of its own, the first answer read, and
/// the stream closed. A TTL of 0 or less in the answer: the lease ended.
pub(super) async fn keep_alive_once(
    mut leases: rpc::lease_client::LeaseClient<Intercepted>,
    id: i64,
) -> Result<bool, tonic::Status> {
    let (requests, receiver) = mpsc::channel(1);
    requests
        .send(rpc::LeaseKeepAliveRequest { id })
        .await
        .map_err(|_| tonic::Status::internal("the keep-alive request was not sent"))?;
    let mut answers = leases.lease_keep_alive(ReceiverStream::new(receiver)).await?.into_inner();
    match answers.message().await? {
        Some(answer) => Ok(answer.ttl > 0),
        None => Err(tonic::Status::unavailable("the keep-alive stream ended before its answer")),
    }
}

/// A watch: its requests' sender (the watch lives while it does) and its answers.
#[derive(Debug)]
pub(crate) struct WatchStream {
    _requests: mpsc::Sender<rpc::WatchRequest>,
    answers: tonic::Streaming<rpc::WatchResponse>,
}

/// Asks for a watch of every deletion under `prefix`.
pub(super) async fn watch_deletions(
    mut watches: rpc::watch_client::WatchClient<Intercepted>,
    prefix: &[u8],
) -> Result<WatchStream, tonic::Status> {
    let (requests, receiver) = mpsc::channel(1);
    let (key, range_end) = super::kv::prefix_range(prefix);
    let create =
        rpc::WatchCreateRequest { key, range_end, filters: vec![FilterType::Noput.into()], ..Default::default() };
    requests
        .send(rpc::WatchRequest { request_union: Some(RequestUnion::CreateRequest(create)) })
        .await
        .map_err(|_| tonic::Status::internal("the watch request was not sent"))?;
    let answers = watches.watch(ReceiverStream::new(receiver)).await?.into_inner();
    Ok(WatchStream { _requests: requests, answers })
}

impl WatchStream {
    /// The stream once the cluster answered that it created the watch.
    pub(super) async fn created(mut self) -> Result<Self, Error> {
        match self.answers.message().await? {
            Some(answer) if answer.created && !answer.canceled => Ok(self),
            Some(answer) => Err(Error::Refused(answer.cancel_reason)),
            None => Err(Error::Status(tonic::Status::unavailable("the watch ended before it was created"))),
        }
    }

    /// The next answer; none once the stream ended.
    pub(crate) async fn message(&mut self) -> Result<Option<rpc::WatchResponse>, Error> {
        Ok(self.answers.message().await?)
    }
}

/// The key `event` deleted, if it is a deletion.
pub(crate) fn is_deletion(event: &Event) -> Option<&crate::pb::mvccpb::KeyValue> {
    (event.r#type == i32::from(EventType::Delete)).then_some(event.kv.as_ref()).flatten()
}
