//! Where primitives read their `GREL_*` settings from, and the once-per-variable warnings.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use tenure_core::{EnvVars, EnvWarning};

/// The variables a builder reads.
#[derive(Clone, Debug)]
pub(crate) enum EnvSource {
    /// The process environment, read at build.
    Process,
    /// Given variables.
    Vars(EnvVars),
}

impl EnvSource {
    pub(crate) fn vars(&self) -> EnvVars {
        match self {
            Self::Process => process_env(),
            Self::Vars(vars) => vars.clone(),
        }
    }
}

/// The process environment now, as the core reads variables (variables that are not UTF-8
/// cannot name a Tenure setting and are skipped).
pub fn process_env() -> EnvVars {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect()
}

static WARNED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Logs each warning once per variable per process (grelmicro's `EnvLoadOffWarning`).
pub(crate) fn resolve_warnings(warnings: &[EnvWarning]) {
    for warning in warnings {
        let EnvWarning::EnvLoadOff { variable } = warning else { continue };
        let first = WARNED.lock().unwrap_or_else(PoisonError::into_inner).insert(variable.clone());
        if first {
            tracing::warn!(code = warning.code(), "{warning}");
        }
    }
}
