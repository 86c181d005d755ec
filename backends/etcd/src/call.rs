//! Where etcd's client runs, and its failures as store errors.

use std::future::Future;
use std::sync::OnceLock;

use tenure_core::{BackendError, BackendErrorKind};

use crate::client::Error;

/// Runs `call` on tokio: where it is polled when that is inside a tokio runtime, else on this
/// crate's own small runtime (smol, async-std, a plain thread).
pub(crate) async fn on_tokio<T: Send + 'static>(
    call: impl Future<Output = T> + Send + 'static,
) -> Result<T, BackendError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Ok(call.await);
    }
    private()
        .spawn(call)
        .await
        .map_err(|e| BackendError::new(BackendErrorKind::Other, format!("an etcd call failed: {e}")))
}

/// Where the store's own tasks run: the tokio runtime of this thread, else this crate's.
pub(crate) fn tokio_handle() -> tokio::runtime::Handle {
    tokio::runtime::Handle::try_current().unwrap_or_else(|_| private().handle().clone())
}

fn private() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("tenure-etcd")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the etcd client's runtime thread: {e}"))
    })
}

/// `e`, which happened while `what`, as a store error of the matching kind.
pub(crate) fn failed(what: &str, e: &Error) -> BackendError {
    use tonic::Code;
    let kind = match e {
        Error::Status(status) => match status.code() {
            Code::Unavailable | Code::Aborted => BackendErrorKind::Unavailable,
            // tonic's status for a connection that broke mid-call (a member killed), or for a
            // stream the member reset or refused (HTTP/2's own codes, which tonic maps only
            // when built with its server).
            Code::Unknown => match cause(status) {
                Some(Cause::Connection | Cause::Stream(h2::Reason::REFUSED_STREAM) | Cause::GoAway) => {
                    BackendErrorKind::Unavailable
                }
                Some(Cause::Stream(h2::Reason::CANCEL)) => BackendErrorKind::Timeout,
                _ => BackendErrorKind::Other,
            },
            Code::DeadlineExceeded | Code::Cancelled => BackendErrorKind::Timeout,
            Code::Unauthenticated | Code::PermissionDenied | Code::InvalidArgument => BackendErrorKind::Rejected,
            _ => BackendErrorKind::Other,
        },
        Error::Refused(_) => BackendErrorKind::Rejected,
        Error::Invalid(_) => BackendErrorKind::Other,
    };
    BackendError::new(kind, format!("etcd: {what} failed: {e}"))
}

/// What broke under a call that ended with no code of its own.
enum Cause {
    /// The connection failed (a broken pipe, a reset).
    Connection,
    /// The member reset the call's stream, for this reason.
    Stream(h2::Reason),
    /// The member is closing the connection.
    GoAway,
}

/// The failure `status` wraps, if it is one of the connection's or of its HTTP/2 stream.
fn cause(status: &tonic::Status) -> Option<Cause> {
    let mut source = std::error::Error::source(status);
    while let Some(e) = source {
        if e.is::<std::io::Error>() {
            return Some(Cause::Connection);
        }
        if let Some(h2) = e.downcast_ref::<h2::Error>() {
            if h2.is_io() {
                return Some(Cause::Connection);
            }
            if h2.is_go_away() {
                return Some(Cause::GoAway);
            }
            return h2.reason().map(Cause::Stream);
        }
        source = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_broken_mid_call_is_unavailable_and_other_unknowns_are_not() {
        let broken = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stream closed because of a broken pipe");
        let status = tonic::Status::from_error(Box::new(broken));
        assert_eq!(status.code(), tonic::Code::Unknown);
        let error = failed("granting a lease of lock:f", &Error::Status(status));
        assert_eq!(error.kind(), BackendErrorKind::Unavailable, "{error}");
        let unknown = Error::Status(tonic::Status::unknown("something else"));
        assert_eq!(failed("a call", &unknown).kind(), BackendErrorKind::Other);
        let reset = |reason| Error::Status(tonic::Status::from_error(Box::new(h2::Error::from(reason))));
        assert_eq!(failed("a call", &reset(h2::Reason::REFUSED_STREAM)).kind(), BackendErrorKind::Unavailable);
        assert_eq!(failed("a call", &reset(h2::Reason::CANCEL)).kind(), BackendErrorKind::Timeout);
        assert_eq!(failed("a call", &reset(h2::Reason::INTERNAL_ERROR)).kind(), BackendErrorKind::Other);
        let refused = Error::Refused("etcdserver: permission denied".to_owned());
        assert_eq!(failed("watching", &refused).kind(), BackendErrorKind::Rejected);
    }
}
