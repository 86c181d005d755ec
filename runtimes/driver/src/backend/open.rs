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

/// `url` with the password (if any) replaced by `***`, for messages and logs.
pub fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "the URL".into();
    };
    let (authority, path) = rest.find(['/', '?', '#']).map_or((rest, ""), |i| rest.split_at(i));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let hidden = userinfo.split_once(':').map_or_else(|| "***".to_owned(), |(user, _)| format!("{user}:***"));
            format!("{scheme}://{hidden}@{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(shown_url("redis://:pw@h:1/0"), "redis://:***@h:1/0");
        assert_eq!(shown_url("rediss://u:pw@h"), "rediss://u:***@h");
        assert_eq!(shown_url("postgres://pw@h/db?sslmode=require"), "postgres://***@h/db?sslmode=require");
        assert_eq!(shown_url("redis://h:1"), "redis://h:1");
        assert_eq!(shown_url("nonsense"), "the URL");
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
