//! The message a store pushes when it hands a lock to a queued waiter (a release's hand-off,
//! DESIGN §4.5), the same on every store that keeps a queue: `<fence>:<name length>:<name><token>`
//! published on the route (a channel) of the waiter's backend.

use tenure_core::{BackendError, BackendErrorKind, FencingToken};

/// A backend's route: the channel its grants are published on, unique among the processes
/// sharing a store (a random part, the process and a counter), made of `[0-9a-f.]`.
pub fn route_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    format!("{random:016x}.{:x}.{:x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A grant message: `(name, token, fence)`.
pub fn grant(payload: &[u8]) -> Result<(String, String, FencingToken), BackendError> {
    let bad = || {
        let text = "a queued hand-off's message is not <fence>:<length>:<name><token>";
        BackendError::new(BackendErrorKind::MalformedRecord, text)
    };
    let text = std::str::from_utf8(payload).map_err(|_| bad())?;
    let (fence, rest) = text.split_once(':').ok_or_else(bad)?;
    let (length, rest) = rest.split_once(':').ok_or_else(bad)?;
    let fence = fence.parse::<u64>().ok().filter(|&f| f > 0).map(FencingToken::new).ok_or_else(bad)?;
    let length = length.parse::<usize>().map_err(|_| bad())?;
    let (name, token) = (rest.get(..length).ok_or_else(bad)?, rest.get(length..).ok_or_else(bad)?);
    if token.is_empty() {
        return Err(bad());
    }
    Ok((name.to_owned(), token.to_owned(), fence))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_message_names_the_lock_the_token_and_the_fence() {
        let (name, token, fence) = grant(b"42:9:lock:cartw1:task:7.ab:cd").expect("a grant");
        assert_eq!((name.as_str(), token.as_str(), fence.get()), ("lock:cart", "w1:task:7.ab:cd", 42));
        for bad in [&b""[..], b"x:9:lock:cartw1", b"0:9:lock:cartw1", b"4:99:lock:cart", b"4:9:lock:cart", b"\xff"] {
            assert!(grant(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn routes_differ() {
        let (a, b) = (route_id(), route_id());
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit() || c == '.'), "{a}");
    }
}
