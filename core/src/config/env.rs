//! `GREL_*` environment resolution (spec §2.2 as amended by grelmicro 0.44), as a pure function
//! of a variable map passed in.
//!
//! - **Gate** `GREL_ENV_LOAD`: unset or blank, or `1`/`true`/`yes`/`on` (any case, trimmed),
//!   reads the environment; any other value turns reads off. `env_load` overrides it per
//!   construction. When the variable turned reads off and a variable this config would have read
//!   is set, an [`EnvWarning::EnvLoadOff`] is returned for it.
//! - **Prefixes**: `GREL_{KIND}_` for the instance named `default`, else `GREL_{KIND}_{SEGMENT}_`
//!   with the kind-wide `GREL_{KIND}_` as a fallback; `env_prefix` replaces the instance prefix
//!   verbatim and disables the fallback.
//! - **Precedence** per field: a value set on the builder, then the instance variable, then the
//!   kind-wide variable, then the default.
//! - Variable names match case-insensitively.
//!
//! One deliberate difference: grelmicro derives the name segment even when reads are off, so
//! `Lock("42abc")` fails although the name is valid. Tenure derives it only when it reads.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::text::{parse_duration, parse_float};
use crate::error::{Error, SettingsError};
use crate::ids::{WorkerId, shown};

/// The variable that gates environment reads.
pub const ENV_LOAD_VAR: &str = "GREL_ENV_LOAD";

/// A snapshot of environment variables, looked up case-insensitively.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvVars {
    /// Upper-cased name → (name as given, value).
    vars: BTreeMap<String, (String, String)>,
}

impl EnvVars {
    /// No variables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `name` to `value`. When two names differ only in case, the upper-case one wins,
    /// else the first one set.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let name = name.into();
        let upper = name.to_uppercase();
        let replace = match self.vars.get(&upper) {
            None => true,
            Some((existing, _)) => *existing == name || (name == upper && *existing != upper),
        };
        if replace {
            self.vars.insert(upper, (name, value.into()));
        }
    }

    /// The value of `name`, whatever its case.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(&name.to_uppercase()).map(|(_, v)| v.as_str())
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for EnvVars {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut env = Self::new();
        for (k, v) in iter {
            env.set(k, v);
        }
        env
    }
}

/// Per-construction environment options (`env_prefix=`, `env_load=`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvOptions {
    /// Read exactly `{env_prefix}{FIELD}` instead of the derived prefixes.
    pub env_prefix: Option<String>,
    /// Read (`Some(true)`) or ignore (`Some(false)`) the environment whatever `GREL_ENV_LOAD`
    /// says; `None` follows it.
    pub env_load: Option<bool>,
}

/// Something worth telling the user about how the environment was read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvWarning {
    /// `GREL_ENV_LOAD` turned reads off, so this set variable was ignored (grelmicro's
    /// `EnvLoadOffWarning`, code `env-load-off`).
    EnvLoadOff {
        /// The ignored variable.
        variable: String,
    },
}

impl EnvWarning {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::EnvLoadOff { .. } => "env-load-off",
        }
    }
}

impl std::fmt::Display for EnvWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::EnvLoadOff { variable } => write!(
                f,
                "{variable} is set but {ENV_LOAD_VAR} turned environment reads off, so it was ignored; \
                 unset {ENV_LOAD_VAR} or pass env_load=true to read it"
            ),
        }
    }
}

/// Whether reads are on, and whether `GREL_ENV_LOAD` itself turned them off.
fn gate(env: &EnvVars, explicit: Option<bool>) -> (bool, bool) {
    if let Some(on) = explicit {
        return (on, false);
    }
    let on = match env.get(ENV_LOAD_VAR).map(|v| v.trim().to_ascii_lowercase()) {
        None => true,
        Some(v) => matches!(v.as_str(), "" | "1" | "true" | "yes" | "on"),
    };
    (on, !on)
}

/// The upper-case segment of a name in variable names (spec §2.2): every run of characters
/// outside `[A-Z0-9_]` becomes one `_`, runs of `_` collapse, and `_` is trimmed at both ends.
pub fn name_segment(name: &str) -> Result<String, Error> {
    let mut out = String::with_capacity(name.len());
    for c in name.to_uppercase().chars() {
        let c = if c.is_ascii_uppercase() || c.is_ascii_digit() { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let segment = out.trim_matches('_').to_owned();
    let problem = if segment.is_empty() {
        "has no letters or digits"
    } else if segment.starts_with(|c: char| c.is_ascii_digit()) {
        "starts with a digit"
    } else {
        return Ok(segment);
    };
    Err(SettingsError::field(
        "name",
        format!(
            "cannot derive environment variable names from the name {}: its segment {problem}. \
             Pass env_prefix to choose the variables, or env_load=false",
            shown(name)
        ),
    )
    .into())
}

/// Reads the fields of one configuration from the environment, in precedence order.
#[derive(Debug)]
pub struct EnvReader<'a> {
    env: &'a EnvVars,
    on: bool,
    warn_off: bool,
    prefixes: Vec<String>,
    warnings: Vec<EnvWarning>,
}

impl<'a> EnvReader<'a> {
    /// A reader for the instance `name` of `kind` (`LOCK`, `TASKLOCK`, `LEADERELECTION`).
    pub fn new(kind: &str, name: &str, env: &'a EnvVars, options: &EnvOptions) -> Result<Self, Error> {
        let (on, warn_off) = gate(env, options.env_load);
        let kind_prefix = format!("GREL_{kind}_");
        let prefixes = match &options.env_prefix {
            Some(prefix) => vec![prefix.clone()],
            None if name == "default" => vec![kind_prefix],
            // Without reads the segment is never used; don't fail on a name it can't handle.
            None if !on && !warn_off => Vec::new(),
            None => match name_segment(name) {
                Ok(segment) => vec![format!("{kind_prefix}{segment}_"), kind_prefix],
                Err(e) if on => return Err(e),
                // Reads are off: nothing to warn about under a name with no segment.
                Err(_) => Vec::new(),
            },
        };
        Ok(Self { env, on, warn_off, prefixes, warnings: Vec::new() })
    }

    /// The first set variable for `field` and its name, following precedence.
    fn lookup(&mut self, field: &str) -> Option<(String, &'a str)> {
        let env = self.env;
        let found = self.prefixes.iter().find_map(|prefix| {
            let var = format!("{prefix}{field}");
            env.get(&var).map(|value| (var, value))
        });
        match found {
            Some((var, _)) if !self.on => {
                if self.warn_off {
                    self.warnings.push(EnvWarning::EnvLoadOff { variable: var });
                }
                None
            }
            found => found,
        }
    }

    /// Fills a duration field left unset by the caller.
    pub fn duration(&mut self, field: &str, slot: &mut Option<Duration>) -> Result<(), Error> {
        if slot.is_none()
            && let Some((var, value)) = self.lookup(field)
        {
            *slot = Some(parse_duration(&var, value)?);
        }
        Ok(())
    }

    /// Fills a number field left unset by the caller.
    pub fn float(&mut self, field: &str, slot: &mut Option<f64>) -> Result<(), Error> {
        if slot.is_none()
            && let Some((var, value)) = self.lookup(field)
        {
            *slot = Some(parse_float(&var, value)?);
        }
        Ok(())
    }

    /// Fills the worker identity if the caller left it unset.
    pub fn worker(&mut self, slot: &mut Option<WorkerId>) -> Result<(), Error> {
        if slot.is_none()
            && let Some((var, value)) = self.lookup("WORKER")
        {
            let worker = WorkerId::new(value.trim()).map_err(|_| {
                Error::from(SettingsError::field(
                    &var,
                    format!("{var} must have 1 to 200 characters and no control characters"),
                ))
            })?;
            *slot = Some(worker);
        }
        Ok(())
    }

    /// The warnings gathered while reading.
    pub fn into_warnings(self) -> Vec<EnvWarning> {
        self.warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> EnvVars {
        pairs.iter().map(|&(k, v)| (k, v)).collect()
    }

    #[test]
    fn segments_follow_the_reference_examples() {
        for (name, seg) in [
            ("cart", "CART"),
            ("payments-eu", "PAYMENTS_EU"),
            ("cart.v2", "CART_V2"),
            ("foo:bar", "FOO_BAR"),
            ("weather/svc", "WEATHER_SVC"),
            ("my--lock", "MY_LOCK"),
            ("_x__y_", "X_Y"),
            ("héllo wörld", "H_LLO_W_RLD"),
        ] {
            assert_eq!(name_segment(name).ok().as_deref(), Some(seg), "{name}");
        }
        assert!(name_segment("42abc").is_err());
        assert!(name_segment("--").is_err());
    }

    #[test]
    fn gate_is_on_by_default_and_off_for_other_values() {
        assert_eq!(gate(&env(&[]), None), (true, false));
        for on in ["", " 1 ", "TRUE", "yes", "On"] {
            assert_eq!(gate(&env(&[(ENV_LOAD_VAR, on)]), None), (true, false), "{on}");
        }
        for off in ["0", "false", "no", "off", "maybe"] {
            assert_eq!(gate(&env(&[(ENV_LOAD_VAR, off)]), None), (false, true), "{off}");
        }
        assert_eq!(gate(&env(&[(ENV_LOAD_VAR, "0")]), Some(true)), (true, false));
        assert_eq!(gate(&env(&[]), Some(false)), (false, false));
    }

    #[test]
    fn lookups_are_case_insensitive_and_prefer_upper_case_names() {
        let vars = env(&[("grel_lock_x", "lower"), ("GREL_LOCK_X", "upper"), ("Grel_Lock_X", "mixed")]);
        assert_eq!(vars.get("GREL_LOCK_X"), Some("upper"));
        assert_eq!(vars.get("grel_lock_x"), Some("upper"));
        assert_eq!(env(&[("a", "1"), ("A", "2")]).get("a"), Some("2"));
    }

    #[test]
    fn instance_then_kind_then_nothing() {
        let vars = env(&[("GREL_LOCK_CART_LEASE_DURATION", "7"), ("GREL_LOCK_LEASE_DURATION", "9")]);
        let mut reader = EnvReader::new("LOCK", "cart", &vars, &EnvOptions::default()).expect("reader");
        let mut lease = None;
        reader.duration("LEASE_DURATION", &mut lease).expect("parses");
        assert_eq!(lease, Some(Duration::from_secs(7)));
        let mut reader = EnvReader::new("LOCK", "other", &vars, &EnvOptions::default()).expect("reader");
        let mut lease = None;
        reader.duration("LEASE_DURATION", &mut lease).expect("parses");
        assert_eq!(lease, Some(Duration::from_secs(9)), "kind-wide fallback");
        let mut preset = Some(Duration::from_secs(1));
        reader.duration("LEASE_DURATION", &mut preset).expect("parses");
        assert_eq!(preset, Some(Duration::from_secs(1)), "a set field beats the environment");
    }

    #[test]
    fn env_prefix_reads_exactly_its_variables() {
        let vars = env(&[("MYAPP_LOCK_CART_LEASE_DURATION", "3"), ("GREL_LOCK_RETRY_INTERVAL", "0.5")]);
        let options = EnvOptions { env_prefix: Some("MYAPP_LOCK_CART_".into()), env_load: None };
        let mut reader = EnvReader::new("LOCK", "cart", &vars, &options).expect("reader");
        let (mut lease, mut retry) = (None, None);
        reader.duration("LEASE_DURATION", &mut lease).expect("parses");
        reader.duration("RETRY_INTERVAL", &mut retry).expect("parses");
        assert_eq!(lease, Some(Duration::from_secs(3)));
        assert_eq!(retry, None, "no kind fallback with env_prefix");
    }

    #[test]
    fn reads_off_by_variable_warn_once_per_variable_and_explicit_off_is_silent() {
        let vars = env(&[(ENV_LOAD_VAR, "0"), ("GREL_LOCK_CART_LEASE_DURATION", "7")]);
        let mut reader = EnvReader::new("LOCK", "cart", &vars, &EnvOptions::default()).expect("reader");
        let mut lease = None;
        reader.duration("LEASE_DURATION", &mut lease).expect("parses");
        assert_eq!(lease, None);
        let warnings = reader.into_warnings();
        assert_eq!(warnings, vec![EnvWarning::EnvLoadOff { variable: "GREL_LOCK_CART_LEASE_DURATION".into() }]);
        assert_eq!(warnings[0].code(), "env-load-off");

        let options = EnvOptions { env_prefix: None, env_load: Some(false) };
        let mut reader = EnvReader::new("LOCK", "42abc", &vars, &options).expect("no segment needed");
        reader.duration("LEASE_DURATION", &mut lease).expect("parses");
        assert!(reader.into_warnings().is_empty());
    }

    #[test]
    fn bad_values_name_the_variable() {
        let vars = env(&[("GREL_LOCK_CART_LEASE_DURATION", "0.0"), ("GREL_LOCK_CART_WORKER", "\u{7}")]);
        let mut reader = EnvReader::new("LOCK", "cart", &vars, &EnvOptions::default()).expect("reader");
        let err = reader.duration("LEASE_DURATION", &mut None).expect_err("zero");
        assert!(err.to_string().contains("GREL_LOCK_CART_LEASE_DURATION"), "{err}");
        let err = reader.worker(&mut None).expect_err("control char");
        assert!(err.to_string().contains("GREL_LOCK_CART_WORKER"), "{err}");
        assert!(EnvReader::new("LOCK", "42abc", &vars, &EnvOptions::default()).is_err());
    }
}
