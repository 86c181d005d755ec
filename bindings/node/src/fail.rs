//! Why a call failed, as the JavaScript half reads it: a rejection (or throw) whose message is a
//! marker and a JSON object — `code`, `message`, the lock `name`, the `timeoutMs` of a timeout
//! and the store's failure behind it as `cause` — which `lib/errors.js` turns into its class.
//! Messages come from the core and the stores, which never show an ownership token or a
//! password.

use napi::Status;
use serde_json::{Map, Value, json};
use tenure::core::{BackendError, BackendErrorKind};

/// What starts the message of an error made here (`lib/errors.js` looks for it).
const MARKER: &str = "\u{0}tenure:";

/// Why a call failed.
#[derive(Debug)]
pub(crate) enum Fail {
    /// An error of the core, with its stable code.
    Core(tenure::Error),
    /// A store's failure outside a lock operation (opening it, closing it).
    Store(BackendError),
    /// The call's `AbortSignal` fired first.
    Aborted,
    /// A bug: the operation panicked.
    Panic(String),
}

impl From<tenure::Error> for Fail {
    fn from(e: tenure::Error) -> Self {
        Self::Core(e)
    }
}

impl From<tenure::OpenError> for Fail {
    fn from(e: tenure::OpenError) -> Self {
        match e {
            tenure::OpenError::Settings(e) => Self::Core(tenure::Error::Settings(e)),
            tenure::OpenError::Store(e) => Self::Store(e),
            other => Self::Store(BackendError::new(BackendErrorKind::Other, other.to_string())),
        }
    }
}

fn store(e: &BackendError) -> Value {
    let mut fields = json!({ "code": e.kind().code(), "message": e.to_string() });
    if let Some(Thrown(id)) = std::error::Error::source(e).and_then(|s| s.downcast_ref::<Thrown>()) {
        fields["thrown"] = (*id).into();
    }
    fields
}

/// What a user's backend threw, kept by `lib/errors.js` under this id: the store error's
/// `cause` in JavaScript.
#[derive(Debug)]
pub(crate) struct Thrown(pub(crate) u32);

impl std::fmt::Display for Thrown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a value thrown by a backend written in JavaScript (kept as #{})", self.0)
    }
}

impl std::error::Error for Thrown {}

impl Fail {
    /// The fields `lib/errors.js` builds its error from.
    fn fields(&self) -> Value {
        match self {
            Self::Core(e) => {
                let mut fields = Map::new();
                fields.insert("code".into(), e.code().into());
                fields.insert("message".into(), e.to_string().into());
                if let Some(name) = e.name() {
                    fields.insert("name".into(), name.into());
                }
                if let tenure::Error::Settings(settings) = e
                    && let Some(field) = settings.field_name()
                {
                    fields.insert("field".into(), field.into());
                }
                if let tenure::Error::Timeout { timeout, .. } = e {
                    fields.insert("timeoutMs".into(), (timeout.as_secs_f64() * 1000.0).into());
                }
                let cause = std::error::Error::source(e).and_then(|s| s.downcast_ref::<BackendError>());
                if let Some(cause) = cause {
                    fields.insert("cause".into(), store(cause));
                }
                Value::Object(fields)
            }
            Self::Store(e) => store(e),
            Self::Aborted => json!({ "code": "ABORTED", "message": "the operation was aborted" }),
            Self::Panic(message) => {
                json!({ "code": "INTERNAL", "message": format!("tenure failed (a bug, please report it): {message}") })
            }
        }
    }

    /// The error JavaScript receives.
    pub(crate) fn into_napi(self) -> napi::Error {
        napi::Error::new(Status::GenericFailure, format!("{MARKER}{}", self.fields()))
    }
}

/// `result` with its failure as JavaScript receives it (for calls that answer at once).
pub(crate) fn sync<T>(result: Result<T, Fail>) -> napi::Result<T> {
    result.map_err(Fail::into_napi)
}
