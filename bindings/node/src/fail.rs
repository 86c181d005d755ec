//! Why a call failed, as the JavaScript half reads it: a rejection (or throw) whose message is a
//! marker and a JSON object — the `class` of the core's error table, `code`, `message`, and the
//! class's fields: the lock `name`, the `timeoutMs` of a timeout, the settings `field`, a lost
//! lease's `reason` and the store's failure behind it as `cause` — which `lib/errors.js` turns
//! into its class.
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

impl From<tenure_open::OpenError> for Fail {
    fn from(e: tenure_open::OpenError) -> Self {
        match e {
            tenure_open::OpenError::Settings(e) => Self::Core(tenure::Error::Settings(e)),
            tenure_open::OpenError::Store(e) => Self::Store(e),
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
                use tenure::core::error::table::FieldValue;
                let mut fields = Map::new();
                fields.insert("class".into(), e.class().class.into());
                fields.insert("code".into(), e.code().into());
                fields.insert("message".into(), e.to_string().into());
                for (field, value) in e.fields() {
                    let (key, value) = match value {
                        FieldValue::Text(text) => (field.as_str(), text.into()),
                        FieldValue::Duration(d) => ("timeoutMs", (d.as_secs_f64() * 1000.0).into()),
                        FieldValue::Store(cause) => ("cause", store(cause)),
                        _ => continue,
                    };
                    fields.insert(key.into(), value);
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
