//! What stores share for opening: the error of an open, and the decoding of their URLs.

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
/// is written — `user:password@`, `:password@`, or a `password=` / `sslpassword=` parameter.
///
/// The one masking of Tenure: every store, the CLI and the bindings show URLs through it.
/// A lone `user@` names a user (RFC 3986; libpq, redis-rs and redis-py all read it so) and stays.
/// Everything before the last `@` counts as the user part, so a password holding a `/`, `?` or
/// `@` of its own is still hidden; text without a scheme is not shown at all (it may be a
/// password pasted in the wrong place).
pub fn shown_url(url: &str) -> String {
    let Some(colon) = url.find(':') else {
        return "(a value without a scheme)".into();
    };
    let (base, fragment) = url.split_once('#').map_or((url, None), |(b, f)| (b, Some(f)));
    let prefix_end = if url[colon..].starts_with("://") { colon + 3 } else { colon + 1 };
    let (prefix, rest) = base.split_at(prefix_end.min(base.len()));
    let (userinfo, tail) = rest.rsplit_once('@').map_or((None, rest), |(u, t)| (Some(u), t));
    let mut shown = prefix.to_owned();
    if let Some(userinfo) = userinfo {
        match userinfo.split_once(':') {
            Some((user, _)) => shown.push_str(&format!("{user}:***@")),
            None => shown.push_str(&format!("{userinfo}@")),
        }
    }
    match tail.split_once('?') {
        Some((path, query)) => {
            shown.push_str(path);
            shown.push('?');
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if is_secret_parameter(key) => format!("{key}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            shown.push_str(&pairs.join("&"));
        }
        None => shown.push_str(tail),
    }
    if let Some(fragment) = fragment {
        shown.push('#');
        shown.push_str(fragment);
    }
    shown
}

fn is_secret_parameter(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key == "password" || key == "sslpassword" || key == "pass"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(shown_url("redis://:pw@h:1/0"), "redis://:***@h:1/0");
        assert_eq!(shown_url("rediss://u:pw@h"), "rediss://u:***@h");
        assert_eq!(shown_url("postgres://app@h/db?sslmode=require"), "postgres://app@h/db?sslmode=require");
        assert_eq!(shown_url("postgres://u:p@ss/w?rd@h/db"), "postgres://u:***@h/db");
        assert_eq!(
            shown_url("postgresql://h/db?sslmode=require&password=pw"),
            "postgresql://h/db?sslmode=require&password=***"
        );
        assert_eq!(shown_url("rediss://:pw@h#insecure"), "rediss://:***@h#insecure");
        assert_eq!(shown_url("redis://h:1"), "redis://h:1");
        assert_eq!(shown_url("sqlite::memory:"), "sqlite::memory:");
        assert_eq!(shown_url("sqlite:///var/lib/a.db?busy_timeout=2"), "sqlite:///var/lib/a.db?busy_timeout=2");
        assert_eq!(shown_url("redis:u:pw@h"), "redis:u:***@h");
        assert_eq!(shown_url("hunter2"), "(a value without a scheme)");
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
