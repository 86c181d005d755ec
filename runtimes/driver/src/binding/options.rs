//! A lock's settings as a front end gives them, once: [`LockOptions`] (each duration already a
//! `Duration`, converted from the front end's [`Unit`] and checked) apply to the builder of a
//! lock, a read-write lock or a semaphore, and reconfigure a running one. What is left `None`
//! comes from the `GREL_*` environment, then from grelmicro's defaults.

use std::time::Duration;

use tenure_core::{
    Error, LeaderElectionConfig, LeaderElectionConfigBuilder, LockConfig, LockConfigBuilder, TaskLockConfig,
    TaskLockConfigBuilder, WorkerId,
};

use crate::runtime::Runtime;

/// The unit a front end gives durations in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unit {
    /// Seconds (Python, the JVM package's native layer, Swift's `TimeInterval`).
    Seconds,
    /// Milliseconds (Node).
    Millis,
}

impl Unit {
    /// `value` in this unit as a duration, or a settings error naming `field` that never echoes
    /// the value: NaN, infinities, zero, negatives, less than a millisecond (in milliseconds)
    /// and more than 100 years are refused.
    pub fn duration(self, field: &str, value: f64) -> Result<Duration, Error> {
        match self {
            Self::Seconds => tenure_core::time::seconds(field, value),
            Self::Millis => millis(field, value),
        }
    }

    /// [`Unit::duration`] of a value that may be missing.
    pub fn optional(self, field: &str, value: Option<f64>) -> Result<Option<Duration>, Error> {
        value.map(|v| self.duration(field, v)).transpose()
    }

    /// `d` in this unit.
    pub fn number(self, d: Duration) -> f64 {
        match self {
            Self::Seconds => d.as_secs_f64(),
            Self::Millis => d.as_secs_f64() * 1000.0,
        }
    }
}

fn millis(field: &str, value: f64) -> Result<Duration, Error> {
    let invalid = |reason: &str| Error::settings(field, format!("{field} {reason}"));
    if value.is_nan() {
        return Err(invalid("must be a number of milliseconds, not NaN"));
    }
    if value.is_infinite() {
        return Err(invalid("must be a finite number of milliseconds"));
    }
    if value <= 0.0 {
        return Err(invalid("must be greater than 0"));
    }
    if value < 1.0 {
        return Err(invalid("must be at least 1 millisecond"));
    }
    let d = Duration::try_from_secs_f64(value / 1000.0).map_err(|_| invalid("must be at most 100 years"))?;
    tenure_core::time::positive(field, d)
}

/// How a front end spells its settings, which an error names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Spelling {
    /// `lease_duration` (Python, grelmicro).
    Snake,
    /// `leaseDuration` (Node, the JVM package).
    Camel,
}

impl Spelling {
    /// `snake` (a setting's name in snake case) as this front end spells it.
    pub fn spell(self, snake: &str) -> String {
        match self {
            Self::Snake => snake.to_owned(),
            Self::Camel => {
                let mut words = snake.split('_');
                let mut camel = words.next().unwrap_or_default().to_owned();
                for word in words {
                    let mut letters = word.chars();
                    camel.extend(letters.next().map(|c| c.to_ascii_uppercase()));
                    camel.push_str(letters.as_str());
                }
                camel
            }
        }
    }
}

/// How many identifiers it is given.
macro_rules! count {
    () => { 0usize };
    ($head:ident $($tail:ident)*) => { 1usize + count!($($tail)*) };
}

/// The options of one kind of primitive: the struct (worker, durations, jitter if it has one,
/// environment), the trait its builders and its configuration builder implement, and
/// `from_numbers`, `apply`, `reconfigure`. The durations and the jitter come as bracketed lists.
macro_rules! options {
    (
        $(#[$doc:meta])*
        $options:ident, $target:ident, $config:ty, $config_builder:ty, [$($builder:ident),+];
        durations: $durations:tt;
        jitter: $jitter:tt;
    ) => {
        options_struct!($(#[$doc])* $options; $durations; $jitter);
        options_trait!($options, $target; $durations; $jitter);
        $(
            options_target!(impl<R: Runtime> $target for crate::$builder<R>; $durations; $jitter;
                fn set_env(mut self, prefix: Option<&str>, load: Option<bool>) -> Self {
                    if let Some(prefix) = prefix {
                        self = self.env_prefix(prefix);
                    }
                    if let Some(load) = load {
                        self = self.env_load(load);
                    }
                    self
                }
            );
        )+
        // `reconfigure` keeps the environment the primitive was built from.
        options_target!(impl $target for $config_builder; $durations; $jitter;
            fn set_env(self, _: Option<&str>, _: Option<bool>) -> Self {
                self
            }
        );
        options_methods!($options, $target, $config; $durations; $jitter);
    };
}

macro_rules! options_struct {
    ($(#[$doc:meta])* $options:ident; [$($duration:ident),+]; [$($jitter:ident)?]) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $options {
            /// This process's identity (random if not given).
            pub worker: Option<String>,
            $(
                #[doc = concat!("The `", stringify!($duration), "` setting.")]
                pub $duration: Option<Duration>,
            )+
            $(
                /// The spread of each pause, a factor in [0, 1).
                pub $jitter: Option<f64>,
            )?
            /// The prefix of the variables read (default the primitive's `GREL_*_{NAME}_`).
            pub env_prefix: Option<String>,
            /// Whether to read the environment (default: `GREL_ENV_LOAD`, else yes).
            pub env_load: Option<bool>,
        }
    };
}

macro_rules! options_trait {
    ($options:ident, $target:ident; [$($duration:ident),+]; [$($jitter:ident)?]) => {
        #[doc = concat!("The builders a [`", stringify!($options), "`] applies to, and the configuration builder its `reconfigure` uses.")]
        pub trait $target: Sized {
            #[doc(hidden)]
            fn set_worker(self, worker: WorkerId) -> Self;
            $(
                #[doc(hidden)]
                fn $duration(self, d: Duration) -> Self;
            )+
            $(
                #[doc(hidden)]
                fn $jitter(self, jitter: f64) -> Self;
            )?
            #[doc(hidden)]
            fn set_env(self, prefix: Option<&str>, load: Option<bool>) -> Self;
        }
    };
}

macro_rules! options_target {
    (impl$(<$r:ident: $bound:ident>)? $target:ident for $builder:ty; [$($duration:ident),+]; [$($jitter:ident)?]; $set_env:item) => {
        impl$(<$r: $bound>)? $target for $builder {
            fn set_worker(self, worker: WorkerId) -> Self {
                self.worker(worker)
            }
            $(
                fn $duration(self, d: Duration) -> Self {
                    <$builder>::$duration(self, d)
                }
            )+
            $(
                fn $jitter(self, jitter: f64) -> Self {
                    <$builder>::$jitter(self, jitter)
                }
            )?
            $set_env
        }
    };
}

macro_rules! options_methods {
    ($options:ident, $target:ident, $config:ty; [$($duration:ident),+]; [$($jitter:ident)?]) => {
        impl $options {
            /// The durations a front end gives in `unit`, in the order of the struct's fields,
            /// checked (an error names the setting as `spelling` spells it); the other settings
            /// are left to fill in.
            pub fn from_numbers(unit: Unit, spelling: Spelling, durations: [Option<f64>; count!($($duration)+)]) -> Result<Self, Error> {
                let [$($duration),+] = durations;
                Ok(Self {
                    $($duration: unit.optional(&spelling.spell(stringify!($duration)), $duration)?,)+
                    ..Self::default()
                })
            }

            /// `builder` with every setting given: a bad worker is an error naming `worker`;
            /// the rest is checked when the builder builds.
            pub fn apply<B: $target>(&self, builder: B) -> Result<B, Error> {
                let mut b = builder;
                if let Some(worker) = &self.worker {
                    b = b.set_worker(WorkerId::new(worker)?);
                }
                Ok(self.durations(b).set_env(self.env_prefix.as_deref(), self.env_load))
            }

            /// `current` with the durations (and jitter) given — the worker and the environment
            /// stay — checked: what `reconfigure` applies from the next call on.
            pub fn reconfigure(&self, current: &$config) -> Result<$config, Error> {
                self.durations(current.to_builder()).build(&mut rand::rng())
            }

            fn durations<B: $target>(&self, mut b: B) -> B {
                $(
                    if let Some(d) = self.$duration {
                        b = $target::$duration(b, d);
                    }
                )+
                $(
                    if let Some(j) = self.$jitter {
                        b = $target::$jitter(b, j);
                    }
                )?
                b
            }
        }
    };
}

options! {
    /// A lock's settings as a front end gives them (a read-write lock's, a semaphore's): the
    /// lease, the pause between attempts, the bound on each store call, the jitter.
    LockOptions, LockOptionsTarget, LockConfig, LockConfigBuilder, [LockBuilder, ReadWriteLockBuilder, SemaphoreBuilder];
    durations: [lease_duration, retry_interval, backend_timeout];
    jitter: [retry_jitter];
}

options! {
    /// A leader election's settings as a front end gives them (its metadata is set on the
    /// builder apart).
    ElectionOptions, ElectionOptionsTarget, LeaderElectionConfig, LeaderElectionConfigBuilder, [LeaderElectionBuilder];
    durations: [lease_duration, renew_deadline, retry_interval, backend_timeout, error_interval];
    jitter: [retry_jitter];
}

options! {
    /// A task lock's settings as a front end gives them.
    TaskLockOptions, TaskLockOptionsTarget, TaskLockConfig, TaskLockConfigBuilder, [TaskLockBuilder];
    durations: [min_hold_duration, lease_duration, backend_timeout];
    jitter: [];
}

/// A lock configuration's settings as numbers in a front end's unit: the worker, then the
/// lease, the retry interval, the jitter and the backend timeout.
pub fn lock_settings(c: &LockConfig, unit: Unit) -> (String, [f64; 4]) {
    let n = |d| unit.number(d);
    (
        c.worker().as_str().to_owned(),
        [n(c.lease_duration()), n(c.retry_interval()), c.retry_jitter(), n(c.backend_timeout())],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_either_unit_are_checked_and_name_the_field() {
        assert_eq!(Unit::Millis.duration("leaseDuration", 1500.0), Ok(Duration::from_millis(1500)));
        assert_eq!(Unit::Seconds.duration("lease_duration", 1.5), Ok(Duration::from_millis(1500)));
        for bad in [f64::NAN, f64::INFINITY, 0.0, -1.0, 0.5] {
            let e = Unit::Millis.duration("leaseDuration", bad).expect_err("refused");
            assert_eq!(e.field(), Some("leaseDuration"), "{e}");
            assert!(!e.to_string().contains("0.5"), "the value is not echoed: {e}");
        }
        assert!(Unit::Seconds.duration("lease_duration", -1.0).is_err());
        assert_eq!(Unit::Millis.number(Duration::from_secs(2)), 2000.0);
    }

    #[test]
    fn options_reconfigure_durations_and_keep_the_worker() {
        let current = LockConfig::builder()
            .worker(WorkerId::new("w1").expect("a worker"))
            .build(&mut rand::rng())
            .expect("defaults");
        let options = LockOptions {
            lease_duration: Some(Duration::from_secs(5)),
            retry_jitter: Some(0.2),
            worker: Some("ignored".into()),
            ..LockOptions::default()
        };
        let changed = options.reconfigure(&current).expect("valid");
        assert_eq!((changed.worker().as_str(), changed.lease_duration()), ("w1", Duration::from_secs(5)));
        let (worker, numbers) = lock_settings(&changed, Unit::Millis);
        assert_eq!((worker.as_str(), numbers[0], numbers[2]), ("w1", 5000.0, 0.2));
        let bad = LockOptions { retry_jitter: Some(1.5), ..LockOptions::default() };
        assert_eq!(bad.reconfigure(&current).expect_err("refused").field(), Some("retry_jitter"));
        let refused = LockOptions::from_numbers(Unit::Millis, Spelling::Camel, [Some(250.0), None, Some(-1.0)]);
        assert_eq!(refused.expect_err("a negative timeout").field(), Some("backendTimeout"));
        let given = LockOptions::from_numbers(Unit::Seconds, Spelling::Snake, [Some(0.25), None, None]).expect("valid");
        assert_eq!((given.lease_duration, given.retry_interval), (Some(Duration::from_millis(250)), None));
        let refused =
            ElectionOptions::from_numbers(Unit::Seconds, Spelling::Snake, [None, None, None, None, Some(0.0)]);
        assert_eq!(refused.expect_err("a zero interval").field(), Some("error_interval"));
        assert_eq!(Spelling::Camel.spell("min_hold_duration"), "minHoldDuration");
    }
}
