//! Errors as one uniffi enum whose variants are the reference's classes (grelmicro's
//! `LockTimeoutError`, `LockNotOwnedError`, …), mapped by the core's variant, never by message
//! text. Messages come from the core and the stores, which never show an ownership token or a
//! password.

use tenure::core::{BackendError, BackendErrorKind};

/// A store's failure: behind a lock operation's error, or opening or closing a store.
#[derive(Debug, Clone, uniffi::Record)]
pub struct StoreFailure {
    /// `STORE_TIMEOUT`, `STORE_UNAVAILABLE`, `STORE_PROTOCOL`, `STORE_MALFORMED_RECORD`,
    /// `STORE_REJECTED`, `STORE_FENCE_REGRESSION`, `STORE_CLOSED` or `STORE_FAILED`.
    pub code: String,
    /// What the store did.
    pub reason: String,
}

impl From<&BackendError> for StoreFailure {
    fn from(e: &BackendError) -> Self {
        Self { code: e.kind().code().to_owned(), reason: e.to_string() }
    }
}

/// Why a call failed. `reason` is the whole message.
#[derive(Debug, thiserror::Error, uniffi::Error)]
#[non_exhaustive]
pub enum TenureError {
    /// An error of the core: `class_name` is its class in the core's error table
    /// (`tenure_core::error::table`, `LockTimeout`), `code` its stable code, and the class's
    /// fields are set: the lock or election `name`, the `timeout` in seconds, the settings
    /// `field`, the `store` failure behind a lock operation, a lost lease's `lost` reason.
    #[error("{reason}")]
    Failure {
        class_name: String,
        code: String,
        reason: String,
        name: Option<String>,
        timeout: Option<f64>,
        field: Option<String>,
        store: Option<StoreFailure>,
        lost: Option<String>,
    },
    /// A store failed outside a lock operation (opening or closing it).
    #[error("{reason}")]
    Store { reason: String, store: StoreFailure },
}

impl From<tenure::Error> for TenureError {
    fn from(e: tenure::Error) -> Self {
        use tenure::core::error::table::{Field, FieldValue};
        let (mut name, mut timeout, mut field, mut store, mut lost) = (None, None, None, None, None);
        for (key, value) in e.fields() {
            match (key, value) {
                (Field::Name, FieldValue::Text(text)) => name = Some(text.to_owned()),
                (Field::Setting, FieldValue::Text(text)) => field = Some(text.to_owned()),
                (Field::Reason, FieldValue::Text(text)) => lost = Some(text.to_owned()),
                (_, FieldValue::Duration(d)) => timeout = Some(d.as_secs_f64()),
                (_, FieldValue::Store(cause)) => store = Some(cause.into()),
                _ => {}
            }
        }
        let (class_name, code) = (e.class().class.to_owned(), e.code().to_owned());
        Self::Failure { class_name, code, reason: e.to_string(), name, timeout, field, store, lost }
    }
}

/// Throws the core's example error of `code`: the cross-binding error test's hook
/// (`tests/interop/errors.py`).
#[uniffi::export]
pub fn raise_error_example(code: String) -> Result<(), TenureError> {
    match tenure::Error::examples().into_iter().find(|e| e.code() == code) {
        Some(e) => Err(e.into()),
        None => Err(tenure::Error::settings("code", format!("no error has the code {code}")).into()),
    }
}

/// The core's table of error classes, as JSON (the cross-binding error test's hook).
#[uniffi::export]
pub fn error_table() -> String {
    tenure::core::error::table::to_json()
}

impl From<BackendError> for TenureError {
    fn from(e: BackendError) -> Self {
        Self::Store { reason: e.to_string(), store: (&e).into() }
    }
}

impl From<tenure_open::OpenError> for TenureError {
    fn from(e: tenure_open::OpenError) -> Self {
        match e {
            tenure_open::OpenError::Settings(e) => tenure::Error::Settings(e).into(),
            tenure_open::OpenError::Store(e) => e.into(),
            other => BackendError::new(BackendErrorKind::Other, other.to_string()).into(),
        }
    }
}

impl From<tenure::core::SettingsError> for TenureError {
    fn from(e: tenure::core::SettingsError) -> Self {
        tenure::Error::Settings(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_keeps_its_name_and_seconds() {
        let e = tenure::Error::Timeout { name: "orders".into(), timeout: std::time::Duration::from_millis(1500) };
        match TenureError::from(e) {
            TenureError::Failure { class_name, name, timeout, reason, .. } => {
                assert_eq!((class_name.as_str(), name.as_deref()), ("LockTimeout", Some("orders")));
                assert!((timeout.expect("a timeout") - 1.5).abs() < 1e-9);
                assert!(reason.contains("orders"), "{reason}");
            }
            other => panic!("mapped to {other:?}"),
        }
    }

    #[test]
    fn a_store_failure_behind_an_acquire_keeps_its_kind() {
        let cause = BackendError::new(BackendErrorKind::Timeout, "no answer");
        match TenureError::from(tenure::Error::Acquire { name: "n".into(), cause }) {
            TenureError::Failure { class_name, store, .. } => {
                assert_eq!(class_name, "LockAcquire");
                assert_eq!(store.expect("a store failure").code, "STORE_TIMEOUT");
            }
            other => panic!("mapped to {other:?}"),
        }
    }

    #[test]
    fn a_bad_setting_names_its_field() {
        let e = tenure::core::time::seconds("leaseDuration", -1.0).expect_err("negative");
        match TenureError::from(e) {
            TenureError::Failure { class_name, field, reason, .. } => {
                assert_eq!(class_name, "SettingsValidation");
                assert_eq!(field.as_deref(), Some("leaseDuration"));
                assert!(reason.contains("greater than 0"), "{reason}");
            }
            other => panic!("mapped to {other:?}"),
        }
    }
}
