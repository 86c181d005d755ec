//! Backend reach (grelmicro 0.44's scopes): how far a backend's exclusion reaches — `process`
//! (memory), `host` (SQLite), `cluster` (Redis, PostgreSQL, etcd), as [`STORES`](crate::STORES)
//! gives each store's — against how far a coordination
//! component requires (default `cluster`). A backend that falls short is refused when
//! `GREL_ENVIRONMENT` is `staging` or `production`, passes silently in `development` and `test`,
//! and is warned about when the variable is unset or unknown. The bindings ask [`judge`] and
//! raise, warn or pass as it says.

use std::fmt;

/// How far a backend's exclusion reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reach {
    /// One process (the memory store).
    Process,
    /// One machine (a SQLite file).
    Host,
    /// Every machine that reaches the store (Redis, PostgreSQL, etcd).
    Cluster,
}

impl Reach {
    /// `process`, `host` or `cluster`, in any case and with spaces around; `None` otherwise.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "process" => Some(Self::Process),
            "host" => Some(Self::Host),
            "cluster" => Some(Self::Cluster),
            _ => None,
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Process => "process",
            Self::Host => "host",
            Self::Cluster => "cluster",
        }
    }
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What [`judge`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every backend reaches far enough, or the environment does not care.
    Fine,
    /// Refused (`BackendScopeError`), with the message.
    Refused(String),
    /// Warned about (`BackendScopeWarning`), with the message; first, when `GREL_ENVIRONMENT`
    /// holds an unknown value, the warning about that (`UnknownEnvironmentWarning`).
    Warned {
        /// The message of the unknown environment's warning, if it is unknown.
        unknown_environment: Option<String>,
        /// The message of the reach's warning.
        message: String,
    },
}

const STRICT: [&str; 2] = ["staging", "production"];
const QUIET: [&str; 2] = ["development", "test"];

/// Judges `backends` (each with the label a message names it by) against `requires`, for
/// `owner` (`Coordination('default')`), in `environment` (`GREL_ENVIRONMENT`'s value, if set).
pub fn judge(owner: &str, backends: &[(String, Reach)], requires: Reach, environment: Option<&str>) -> Verdict {
    let short: Vec<&(String, Reach)> = backends.iter().filter(|(_, reach)| *reach < requires).collect();
    if short.is_empty() {
        return Verdict::Fine;
    }
    let environment = environment.unwrap_or("").trim().to_ascii_lowercase();
    if QUIET.contains(&environment.as_str()) {
        return Verdict::Fine;
    }
    let mut names: Vec<&str> = Vec::new();
    let mut pairs: Vec<&(String, Reach)> = Vec::new();
    for pair in &short {
        if !names.contains(&pair.0.as_str()) {
            names.push(&pair.0);
        }
        if !pairs.contains(pair) {
            pairs.push(pair);
        }
    }
    let mut reaches: Vec<Reach> = short.iter().map(|(_, reach)| *reach).collect();
    reaches.sort();
    reaches.dedup();
    let provide = reaches.iter().map(|r| format!("'{r}'")).collect::<Vec<_>>().join(" and ");
    let verb = if pairs.len() == 1 { "reaches" } else { "reach" };
    let bound = format!("{owner} requires scope '{requires}', but {} {verb} only scope {provide}", and(&names));
    if STRICT.contains(&environment.as_str()) {
        // grelmicro's advice, kept word for word (its users' tests match it).
        let reach = if requires == Reach::Cluster {
            "a Redis or PostgreSQL backend"
        } else {
            "an SQLite, Redis or PostgreSQL backend"
        };
        return Verdict::Refused(format!(
            "{bound} in environment '{environment}'. Use {reach}, or pass requires= to say what reach you want."
        ));
    }
    let unknown_environment = (!environment.is_empty()).then(|| {
        format!(
            "GREL_ENVIRONMENT is set to '{environment}', which is not one of development, test, staging, production, \
             so the backend check runs as if it were undeclared."
        )
    });
    let message = format!(
        "{bound}. Set GREL_ENVIRONMENT to declare where this runs, or pass requires='{}' to say that is the reach you \
         want.",
        reaches[0]
    );
    Verdict::Warned { unknown_environment, message }
}

/// `a`, `a and b`, `a, b and c`.
fn and(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> (String, Reach) {
        ("MemoryProvider".to_owned(), Reach::Process)
    }

    #[test]
    fn far_enough_or_quiet_environments_pass() {
        let redis = ("RedisProvider".to_owned(), Reach::Cluster);
        assert_eq!(judge("Coordination('default')", &[redis], Reach::Cluster, Some("production")), Verdict::Fine);
        for quiet in ["development", " Test "] {
            assert_eq!(judge("C", &[memory()], Reach::Cluster, Some(quiet)), Verdict::Fine);
        }
    }

    #[test]
    fn strict_environments_refuse_and_name_what_falls_short() {
        let sqlite = ("SQLiteProvider".to_owned(), Reach::Host);
        let verdict = judge("Coordination('default')", &[memory(), sqlite], Reach::Cluster, Some("Production"));
        assert_eq!(
            verdict,
            Verdict::Refused(
                "Coordination('default') requires scope 'cluster', but MemoryProvider and SQLiteProvider reach only \
                 scope 'process' and 'host' in environment 'production'. Use a Redis or PostgreSQL backend, or pass \
                 requires= to say what reach you want."
                    .to_owned()
            )
        );
    }

    #[test]
    fn unset_or_unknown_environments_warn() {
        let warned = judge("C", &[memory(), memory()], Reach::Host, None);
        assert_eq!(
            warned,
            Verdict::Warned {
                unknown_environment: None,
                message: "C requires scope 'host', but MemoryProvider reaches only scope 'process'. Set \
                          GREL_ENVIRONMENT to declare where this runs, or pass requires='process' to say that is \
                          the reach you want."
                    .to_owned(),
            }
        );
        let Verdict::Warned { unknown_environment: Some(unknown), .. } =
            judge("C", &[memory()], Reach::Host, Some("prod"))
        else {
            panic!("an unknown environment is warned about");
        };
        assert!(unknown.starts_with("GREL_ENVIRONMENT is set to 'prod', which is not one of"), "{unknown}");
    }

    #[test]
    fn reaches_parse_in_any_case() {
        assert_eq!(Reach::parse(" Cluster "), Some(Reach::Cluster));
        assert_eq!(Reach::parse("region"), None);
    }
}
