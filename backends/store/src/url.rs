//! What stores share for opening: the error of an open, the schemes of their URLs, their
//! parameters' decoding, and the one masking of the passwords in them.

use std::time::Duration;

use tenure_core::{BackendError, SettingsError};

/// Why a store could not be opened.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// An option or URL is wrong; the message names it.
    Settings(SettingsError),
    /// The store could not be reached, opened or prepared.
    Store(BackendError),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Settings(e) => e.fmt(f),
            Self::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Settings(e) => Some(e),
            Self::Store(e) => Some(e),
        }
    }
}

impl From<SettingsError> for OpenError {
    fn from(e: SettingsError) -> Self {
        Self::Settings(e)
    }
}

impl From<BackendError> for OpenError {
    fn from(e: BackendError) -> Self {
        Self::Store(e)
    }
}

/// `text` with its `%XX` escapes decoded; `None` if an escape is broken or the result is not
/// UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `text` with every byte outside RFC 3986's unreserved set percent-escaped.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A store URL's parameter `field` in seconds: a positive, finite number.
pub fn url_seconds(field: &str, text: &str) -> Result<Duration, SettingsError> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| SettingsError::field(field, format!("{field} must be a positive number of seconds")))
}

/// `url` as it may be shown in messages and logs: the password replaced by `***`, wherever it
/// is written — `user:password@`, `:password@`, a `password=` / `sslpassword=` parameter.
///
/// The one masking of Tenure: every store, the CLI and the bindings show URLs through it. It
/// errs toward hiding, so that a password holding `@`, `#`, `/`, `?` or `:` of its own (which a
/// URL should percent-escape) is still hidden:
///
/// - a `password=` value is hidden up to the next `&`, whatever it holds;
/// - everything before the last `@` is the user part: a plain user name (`app@`) stays, the rest
///   of a `user:…` part is hidden, and a user part that is not plain is hidden whole;
/// - text whose scheme is not a store's and has no `://` shows only that scheme.
///
/// `known` tells a store's scheme (in lower case) from other text: `tenure_open::shown_url` knows
/// every store's, a store its own ([`scheme_in`] its list).
pub fn shown_url(url: &str, known: impl Fn(&str) -> bool) -> String {
    let Some((scheme, rest)) = url.split_once(':') else {
        return "(a value without a scheme)".into();
    };
    let (prefix, rest) = match rest.strip_prefix("//") {
        Some(rest) => (format!("{scheme}://"), rest),
        None if known(&scheme.to_ascii_lowercase()) => (format!("{scheme}:"), rest),
        None => return format!("{scheme}:***"),
    };
    let rest = hide_parameters(rest);
    let Some((userinfo, host)) = rest.rsplit_once('@') else { return format!("{prefix}{rest}") };
    let plain = |text: &str| text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b));
    let user = match userinfo.split_once(':') {
        Some((user, _)) if plain(user) => format!("{user}:***"),
        None if plain(userinfo) => userinfo.to_owned(),
        _ => "***".to_owned(),
    };
    format!("{prefix}{user}@{host}")
}

/// Whether `scheme` (lower case) is one of `schemes`: an entry ending in `+*` also takes a
/// `+driver` suffix, as SQLAlchemy writes `postgresql+asyncpg`.
pub fn scheme_in(schemes: &[&str], scheme: &str) -> bool {
    schemes.iter().any(|entry| match entry.strip_suffix('*') {
        Some(stem) => scheme.strip_prefix(stem).is_some_and(|driver| !driver.is_empty()),
        None => scheme == *entry,
    })
}

/// `text` with the value of every `password=`, `sslpassword=` and `sentinel_password=` parameter hidden (to the next
/// `&`, or the end).
fn hide_parameters(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = next_secret(rest) {
        let (before, from) = rest.split_at(at);
        let equals = from.find('=').map_or(from.len(), |i| i + 1);
        shown.push_str(before);
        shown.push_str(&from[..equals]);
        shown.push_str("***");
        rest = &from[equals..];
        rest = rest.find('&').map_or("", |end| &rest[end..]);
    }
    shown.push_str(rest);
    shown
}

/// Where the next secret parameter starts in `text` (its name, after a `?` or `&`).
fn next_secret(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    ["?password=", "&password=", "?sslpassword=", "&sslpassword=", "?sentinel_password=", "&sentinel_password="]
        .iter()
        .filter_map(|key| lower.find(key).map(|i| i + 1))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        for (url, shown) in [
            ("redis://:pw@h:1/0", "redis://:***@h:1/0"),
            ("rediss://u:pw@h", "rediss://u:***@h"),
            ("postgres://app@h/db?sslmode=require", "postgres://app@h/db?sslmode=require"),
            ("postgres://u:p@ss/w?rd@h/db", "postgres://u:***@h/db"),
            ("postgresql://h/db?sslmode=require&password=pw", "postgresql://h/db?sslmode=require&password=***"),
            ("postgresql://h/db?password=p@ss&sslmode=require", "postgresql://h/db?password=***&sslmode=require"),
            ("postgresql://h/db?PassWord=p@ss#x", "postgresql://h/db?PassWord=***"),
            ("rediss://:pw@h#insecure", "rediss://:***@h#insecure"),
            (
                "redis+sentinel://:pw@a,b/m?sentinel_password=s3&prefix=x",
                "redis+sentinel://:***@a,b/m?sentinel_password=***&prefix=x",
            ),
            ("redis://:pa#ss@h", "redis://:***@h"),
            ("redis://u/x:pw@h", "redis://***@h"),
            ("redis://h:1", "redis://h:1"),
            ("sqlite::memory:", "sqlite::memory:"),
            ("sqlite:///var/lib/a.db?busy_timeout=2", "sqlite:///var/lib/a.db?busy_timeout=2"),
            ("redis:u:pw@h", "redis:u:***@h"),
            ("p4ss:word", "p4ss:***"),
            ("hunter2", "(a value without a scheme)"),
        ] {
            assert_eq!(shown_url(url, |s| scheme_in(&["redis", "rediss", "postgres*", "sqlite"], s)), shown, "{url}");
        }
    }

    #[test]
    fn schemes_with_a_driver_suffix() {
        let schemes = ["postgresql", "postgresql+*"];
        assert!(scheme_in(&schemes, "postgresql") && scheme_in(&schemes, "postgresql+asyncpg"));
        assert!(!scheme_in(&schemes, "postgresql+") && !scheme_in(&schemes, "postgres"));
    }

    #[test]
    fn escapes_round_trip_and_seconds_are_positive() {
        assert_eq!(percent_encode("p@ss:w/rd"), "p%40ss%3Aw%2Frd");
        assert_eq!(percent_decode(&percent_encode("é x")).as_deref(), Some("é x"));
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(url_seconds("t", "0.5").expect("valid"), Duration::from_millis(500));
        for bad in ["0", "-1", "nan", "inf", "x"] {
            assert!(url_seconds("t", bad).is_err(), "{bad}");
        }
    }
}
