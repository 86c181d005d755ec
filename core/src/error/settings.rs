//! [`SettingsError`]: an invalid setting, name, environment variable or stored value.

use std::fmt;

/// An invalid setting, name, environment variable or stored value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError {
    field: Option<String>,
    message: String,
}

impl SettingsError {
    /// An error about one field (or environment variable).
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self { field: Some(field.to_owned()), message: message.into() }
    }

    /// An error about the settings as a whole.
    pub fn general(message: impl Into<String>) -> Self {
        Self { field: None, message: message.into() }
    }

    /// The field or variable at fault, when one is.
    pub fn field_name(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// The message, which names the field and the rule and never echoes the rejected value.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SettingsError {}
