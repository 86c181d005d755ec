//! What stores share for opening: the error of an open, and the decoding of their URLs.

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
