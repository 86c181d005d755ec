//! What a call of the client can fail with.

/// A failed call: the cluster's (or tonic's) status, a watch the cluster refused, or something
/// the client itself refused or did not expect.
#[derive(Debug)]
pub(crate) enum Error {
    /// The status a call ended with: etcd's refusals, and tonic's for connections that failed,
    /// broke or timed out.
    Status(tonic::Status),
    /// The cluster refused a watch (its reason): not a status, an answer of the watch stream.
    Refused(String),
    /// An argument or an answer the client cannot use.
    Invalid(String),
}

impl From<tonic::Status> for Error {
    fn from(status: tonic::Status) -> Self {
        Self::Status(status)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // tonic's Display names the code, the message and the cause (a refused connection,
            // an unknown certificate), which is what a reader needs.
            Self::Status(status) => write!(f, "{status}"),
            Self::Refused(reason) => write!(f, "the cluster did not create the watch: {reason}"),
            Self::Invalid(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for Error {}
