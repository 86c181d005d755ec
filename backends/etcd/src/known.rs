//! What a store remembers of its own keys, by name and token: a hint, bounded in size.

use std::collections::HashMap;
use std::sync::Mutex;

/// Entries kept at most; past it the oldest knowledge is forgotten all at once (a forgotten key
/// costs its next call one read).
const LIMIT: usize = 4096;

pub(crate) struct Known<V>(Mutex<HashMap<(String, String), V>>);

impl<V> Default for Known<V> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

impl<V> Known<V> {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), V>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes what is known of `name` and `token` out (put back once confirmed).
    pub(crate) fn take(&self, name: &str, token: &str) -> Option<V> {
        self.map().remove(&(name.to_owned(), token.to_owned()))
    }

    pub(crate) fn put(&self, name: &str, token: &str, value: V) {
        let mut map = self.map();
        if map.len() >= LIMIT {
            map.clear();
        }
        map.insert((name.to_owned(), token.to_owned()), value);
    }
}
