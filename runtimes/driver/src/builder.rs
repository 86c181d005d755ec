//! What the builders of `Lock`, `TaskLock` and `LeaderElection` share: the name, the environment
//! they read, the backend, the runtime, and the steps of `build`.

use std::sync::Arc;

use tenure_core::{
    EnvOptions, EnvVars, Error, LeaderElectionConfig, LeaderElectionConfigBuilder, LockConfig, LockConfigBuilder, Name,
    Resolved, TaskLockConfig, TaskLockConfigBuilder,
};

use crate::env::{EnvSource, resolve_warnings};

/// The part of a builder that is not the configuration.
pub(crate) struct Common<B: ?Sized, R> {
    pub(crate) name: String,
    pub(crate) env: EnvSource,
    pub(crate) options: EnvOptions,
    pub(crate) backend: Option<Arc<B>>,
    pub(crate) runtime: R,
}

impl<B: ?Sized, R> Common<B, R> {
    pub(crate) fn new(name: &str, runtime: R) -> Self {
        Self { name: name.to_owned(), env: EnvSource::Process, options: EnvOptions::default(), backend: None, runtime }
    }

    pub(crate) fn with_vars(&mut self, vars: EnvVars) {
        self.env = EnvSource::Vars(vars);
    }

    /// Validates the name, takes the backend and resolves the configuration from the
    /// environment, reporting its warnings once.
    pub(crate) fn build<C: ResolveConfig>(self, kind: &str, config: C) -> Result<Built<B, C::Config, R>, Error> {
        let name = Name::new(&self.name)?;
        let backend = self.backend.ok_or_else(|| missing_backend(kind, &self.name))?;
        let resolved = config.resolve(&self.name, &self.env.vars(), &self.options)?;
        resolve_warnings(&resolved.warnings);
        Ok(Built { name, config: resolved.config, backend, runtime: self.runtime })
    }
}

/// What a build yields, for the primitive to assemble itself from.
pub(crate) struct Built<B: ?Sized, C, R> {
    pub(crate) name: Name,
    pub(crate) config: C,
    pub(crate) backend: Arc<B>,
    pub(crate) runtime: R,
}

/// grelmicro's `OutOfContextError` for a primitive built without a backend.
pub(crate) fn missing_backend(kind: &str, name: &str) -> Error {
    Error::OutOfContext {
        message: format!(
            "{kind}('{name}') resolved no backend. Pass a backend (a MemoryBackend serves one process), \
             or build it from a Coordination that has one."
        ),
    }
}

/// A configuration builder that reads the environment.
pub(crate) trait ResolveConfig {
    type Config;
    fn resolve(self, name: &str, env: &EnvVars, options: &EnvOptions) -> Result<Resolved<Self::Config>, Error>;
}

macro_rules! resolve_config {
    ($builder:ty => $config:ty) => {
        impl ResolveConfig for $builder {
            type Config = $config;
            fn resolve(self, name: &str, env: &EnvVars, options: &EnvOptions) -> Result<Resolved<$config>, Error> {
                <$builder>::resolve(self, name, env, options, &mut rand::rng())
            }
        }
    };
}

resolve_config!(LockConfigBuilder => LockConfig);
resolve_config!(TaskLockConfigBuilder => TaskLockConfig);
resolve_config!(LeaderElectionConfigBuilder => LeaderElectionConfig);

/// The backend and environment setters every builder has; the builder keeps a `common: Common`.
macro_rules! common_setters {
    ($backend:path) => {
        /// The store (a `MemoryBackend` clone shares its store).
        pub fn backend(self, backend: impl $backend) -> Self {
            self.shared_backend(std::sync::Arc::new(backend))
        }

        /// The store, shared.
        pub fn shared_backend(mut self, backend: std::sync::Arc<dyn $backend>) -> Self {
            self.common.backend = Some(backend);
            self
        }

        /// Reads exactly `{prefix}{FIELD}` variables instead of the derived names (and no
        /// kind-wide fallback).
        pub fn env_prefix(mut self, prefix: &str) -> Self {
            self.common.options.env_prefix = Some(prefix.to_owned());
            self
        }

        /// Reads (`true`) or ignores (`false`) the environment whatever `GREL_ENV_LOAD` says.
        pub fn env_load(mut self, load: bool) -> Self {
            self.common.options.env_load = Some(load);
            self
        }

        /// Reads these variables instead of the process environment.
        pub fn env_vars(mut self, vars: tenure_core::EnvVars) -> Self {
            self.common.with_vars(vars);
            self
        }
    };
}

/// Setters that pass a value to the configuration builder.
macro_rules! config_setters {
    ($($(#[$doc:meta])* $field:ident: $ty:ty),* $(,)?) => {
        $(
            $(#[$doc])*
            pub fn $field(mut self, value: $ty) -> Self {
                self.config = self.config.$field(value);
                self
            }
        )*
    };
}

pub(crate) use {common_setters, config_setters};
