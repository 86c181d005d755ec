//! The bound on how many lock names a process reports as attributes.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The name reported for names past the limit.
pub const OTHER_NAME: &str = "_other";

/// The default limit, when neither [`set_name_limit`] nor `TENURE_METRICS_MAX_NAMES` says.
const DEFAULT_LIMIT: usize = 1_000;

/// `usize::MAX`: not read yet.
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// How many distinct lock names this process reports (see the module docs).
pub fn name_limit() -> usize {
    match LIMIT.load(Ordering::Relaxed) {
        usize::MAX => {
            let limit = from_env(std::env::var("TENURE_METRICS_MAX_NAMES").ok().as_deref());
            LIMIT.store(limit, Ordering::Relaxed);
            limit
        }
        limit => limit,
    }
}

/// Reports at most `limit` distinct lock names from now on (names already reported stay).
pub fn set_name_limit(limit: usize) {
    LIMIT.store(limit.min(usize::MAX - 1), Ordering::Relaxed);
}

/// The limit `TENURE_METRICS_MAX_NAMES` sets: a whole number, else the default (with a warning).
fn from_env(value: Option<&str>) -> usize {
    let Some(value) = value else { return DEFAULT_LIMIT };
    match value.trim().parse::<usize>() {
        Ok(limit) => limit.min(usize::MAX - 1),
        Err(_) => {
            tracing::warn!(
                value,
                default = DEFAULT_LIMIT,
                "TENURE_METRICS_MAX_NAMES is not a whole number; the default limit is used"
            );
            DEFAULT_LIMIT
        }
    }
}

/// The name to report for `name`: itself while the limit allows, else [`OTHER_NAME`].
pub(crate) fn reported(name: &str) -> Arc<str> {
    static SEEN: OnceLock<Mutex<HashSet<Arc<str>>>> = OnceLock::new();
    let mut seen = SEEN.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = seen.get(name) {
        return known.clone();
    }
    if seen.len() >= name_limit() {
        return Arc::from(OTHER_NAME);
    }
    let name: Arc<str> = Arc::from(name);
    seen.insert(name.clone());
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_that_is_not_a_number_falls_back_to_the_default() {
        assert_eq!(from_env(None), DEFAULT_LIMIT);
        assert_eq!(from_env(Some("25")), 25);
        assert_eq!(from_env(Some(" 0 ")), 0);
        assert_eq!(from_env(Some("lots")), DEFAULT_LIMIT);
        assert_eq!(from_env(Some("-3")), DEFAULT_LIMIT);
    }
}
