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

/// Why a call failed. `reason` is the whole message; `name` the lock or election it is about.
#[derive(Debug, thiserror::Error, uniffi::Error)]
#[non_exhaustive]
pub enum TenureError {
    /// `CoordinationBackendError`: no backend of this kind.
    #[error("{reason}")]
    CoordinationBackend { reason: String },
    /// `LockReentrantError`: this holder already holds or is acquiring it.
    #[error("{reason}")]
    LockReentrant { reason: String, name: String },
    /// `LockUpgradeError`: a reader asked for the write lock.
    #[error("{reason}")]
    LockUpgrade { reason: String, name: String },
    /// `LockBusyError`: another operation on this holder is still in progress.
    #[error("{reason}")]
    LockBusy { reason: String, name: String },
    /// `LockNotOwnedError`: released, lost, or never held.
    #[error("{reason}")]
    LockNotOwned { reason: String, name: String },
    /// `LockAcquireError`: the store failed while acquiring.
    #[error("{reason}")]
    LockAcquire { reason: String, name: String, store: StoreFailure },
    /// `LockExtendError`: the store failed while extending.
    #[error("{reason}")]
    LockExtend { reason: String, name: String, store: StoreFailure },
    /// `LockReleaseError`: the store failed while releasing.
    #[error("{reason}")]
    LockRelease { reason: String, name: String, store: StoreFailure },
    /// `LockLockedCheckError`: the store failed in `locked()`.
    #[error("{reason}")]
    LockLockedCheck { reason: String, name: String, store: StoreFailure },
    /// `LockOwnedCheckError`: the store failed in `owned()`.
    #[error("{reason}")]
    LockOwnedCheck { reason: String, name: String, store: StoreFailure },
    /// `WouldBlockError`: a call that does not wait was turned away.
    #[error("{reason}")]
    WouldBlock { reason: String, name: String },
    /// `LockTimeoutError`: not acquired within `timeout` seconds.
    #[error("{reason}")]
    LockTimeout { reason: String, name: String, timeout: f64 },
    /// `OutOfContextError`.
    #[error("{reason}")]
    OutOfContext { reason: String },
    /// `SettingsValidationError`: a setting, name, URL or environment variable is invalid;
    /// `field` names it.
    #[error("{reason}")]
    SettingsValidation { reason: String, field: Option<String> },
    /// A store was used before it was opened or after it was closed.
    #[error("{reason}")]
    BackendNotOpen { reason: String },
    /// A blocking call on a thread of Tenure's own runtime, which it would stall.
    #[error("{reason}")]
    EventLoopDeadlock { reason: String },
    /// A store failed outside a lock operation (opening or closing it).
    #[error("{reason}")]
    Store { reason: String, store: StoreFailure },
}

impl From<tenure::Error> for TenureError {
    fn from(e: tenure::Error) -> Self {
        use tenure::Error as E;
        let reason = e.to_string();
        let named = |name: &str| name.to_owned();
        match &e {
            E::BackendMissing { .. } => Self::CoordinationBackend { reason },
            E::Reentrant { name } => Self::LockReentrant { reason, name: named(name) },
            E::Upgrade { name } => Self::LockUpgrade { reason, name: named(name) },
            E::Busy { name, .. } => Self::LockBusy { reason, name: named(name) },
            E::NotOwned { name } => Self::LockNotOwned { reason, name: named(name) },
            E::Acquire { name, cause } => Self::LockAcquire { reason, name: named(name), store: cause.into() },
            E::Extend { name, cause } => Self::LockExtend { reason, name: named(name), store: cause.into() },
            E::Release { name, cause } => Self::LockRelease { reason, name: named(name), store: cause.into() },
            E::LockedCheck { name, cause } => Self::LockLockedCheck { reason, name: named(name), store: cause.into() },
            E::OwnedCheck { name, cause } => Self::LockOwnedCheck { reason, name: named(name), store: cause.into() },
            E::WouldBlock { name, .. } => Self::WouldBlock { reason, name: named(name) },
            E::Timeout { name, timeout } => {
                Self::LockTimeout { reason, name: named(name), timeout: timeout.as_secs_f64() }
            }
            E::OutOfContext { .. } => Self::OutOfContext { reason },
            E::Settings(settings) => {
                Self::SettingsValidation { reason, field: settings.field_name().map(str::to_owned) }
            }
            E::Deadlock { .. } => Self::EventLoopDeadlock { reason },
            E::NotOpen { .. } => Self::BackendNotOpen { reason },
            // A configuration of another primitive cannot be built here; anything newer is a
            // settings problem until it gets a variant of its own.
            _ => Self::SettingsValidation { reason, field: None },
        }
    }
}

impl From<BackendError> for TenureError {
    fn from(e: BackendError) -> Self {
        Self::Store { reason: e.to_string(), store: (&e).into() }
    }
}

impl From<tenure::OpenError> for TenureError {
    fn from(e: tenure::OpenError) -> Self {
        match e {
            tenure::OpenError::Settings(e) => tenure::Error::Settings(e).into(),
            tenure::OpenError::Store(e) => e.into(),
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
            TenureError::LockTimeout { name, timeout, reason } => {
                assert_eq!(name, "orders");
                assert!((timeout - 1.5).abs() < 1e-9);
                assert!(reason.contains("orders"), "{reason}");
            }
            other => panic!("mapped to {other:?}"),
        }
    }

    #[test]
    fn a_store_failure_behind_an_acquire_keeps_its_kind() {
        let cause = BackendError::new(BackendErrorKind::Timeout, "no answer");
        match TenureError::from(tenure::Error::Acquire { name: "n".into(), cause }) {
            TenureError::LockAcquire { store, .. } => assert_eq!(store.code, "STORE_TIMEOUT"),
            other => panic!("mapped to {other:?}"),
        }
    }

    #[test]
    fn a_bad_setting_names_its_field() {
        let e = tenure::core::time::seconds("leaseDuration", -1.0).expect_err("negative");
        match TenureError::from(e) {
            TenureError::SettingsValidation { field, reason } => {
                assert_eq!(field.as_deref(), Some("leaseDuration"));
                assert!(reason.contains("greater than 0"), "{reason}");
            }
            other => panic!("mapped to {other:?}"),
        }
    }
}
