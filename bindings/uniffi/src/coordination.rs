//! `Coordination` on the JVM (grelmicro's `Coordination`): the store of each primitive (one store
//! for all, or one per kind), named, with the reach its stores must have judged under
//! `GREL_ENVIRONMENT` when it is made. The Kotlin layer builds primitives on [`slot`]'s store.
//!
//! [`slot`]: Coordination::slot

use std::sync::Arc;

use tenure::core::BackendSlot;
use tenure_open::reach::{Reach, Verdict, judge};

use crate::TenureError;
use crate::store::Store;

/// Which store serves each kind of primitive.
#[derive(uniffi::Object)]
pub struct Coordination {
    name: String,
    requires: Reach,
    lock: Option<Arc<Store>>,
    election: Option<Arc<Store>>,
    read_write: Option<Arc<Store>>,
    semaphore: Option<Arc<Store>>,
}

#[uniffi::export]
impl Coordination {
    /// `store` for every kind of primitive it serves, each replaced by the store given for it
    /// (`lock` serves locks and task locks). `requires` (`process`, `host` or `cluster`, the
    /// default) is the reach the stores must have: in `staging` or `production`
    /// (`GREL_ENVIRONMENT`) a store that falls short is a `BackendScope` error; where the
    /// variable is unset or unknown, a warning is logged. A store of your own that declares no
    /// scope is not judged.
    #[uniffi::constructor(default(
        store = None,
        lock = None,
        election = None,
        read_write_lock = None,
        semaphore = None,
        name = None,
        requires = None
    ))]
    pub fn new(
        store: Option<Arc<Store>>,
        lock: Option<Arc<Store>>,
        election: Option<Arc<Store>>,
        read_write_lock: Option<Arc<Store>>,
        semaphore: Option<Arc<Store>>,
        name: Option<String>,
        requires: Option<String>,
    ) -> Result<Arc<Self>, TenureError> {
        let name = name.unwrap_or_else(|| "default".to_owned());
        if name.trim().is_empty() {
            return Err(tenure::core::SettingsError::field("name", "name must not be empty").into());
        }
        let requires = match requires {
            None => Reach::Cluster,
            Some(text) => Reach::parse(&text).ok_or_else(|| {
                let message = format!("requires must be one of process, host, cluster, got {text:?}");
                tenure::core::SettingsError::field("requires", message)
            })?,
        };
        let serving = |given: Option<Arc<Store>>, serves: fn(&Store) -> bool| {
            given.or_else(|| store.clone().filter(|s| serves(s)))
        };
        let coordination = Self {
            lock: serving(lock, |s| s.inner.slots().lock.is_some()),
            election: serving(election, |s| s.inner.slots().election.is_some()),
            read_write: serving(read_write_lock, |s| s.inner.slots().read_write.is_some()),
            semaphore: serving(semaphore, |s| s.inner.slots().semaphore.is_some()),
            name,
            requires,
        };
        coordination.judge()?;
        Ok(Arc::new(coordination))
    }

    /// The registration name (`default` unless given).
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The reach its stores must have: `process`, `host` or `cluster`.
    pub fn requires(&self) -> String {
        self.requires.to_string()
    }

    /// The store of `slot` (`lock`, `election`, `read_write_lock`, `semaphore`), or the
    /// `CoordinationBackend` error naming the missing one.
    pub fn slot(&self, slot: String) -> Result<Arc<Store>, TenureError> {
        let (store, missing) = match slot.as_str() {
            "lock" => (&self.lock, BackendSlot::Lock),
            "election" => (&self.election, BackendSlot::LeaderElection),
            "read_write_lock" => (&self.read_write, BackendSlot::ReadWriteLock),
            "semaphore" => (&self.semaphore, BackendSlot::Semaphore),
            other => {
                let message = format!("slot must be lock, election, read_write_lock or semaphore, not {other:?}");
                return Err(tenure::core::SettingsError::field("slot", message).into());
            }
        };
        store.clone().ok_or_else(|| tenure::Error::BackendMissing { slot: missing }.into())
    }
}

impl Coordination {
    /// Judges the stores' reach (each once) under `GREL_ENVIRONMENT`.
    fn judge(&self) -> Result<(), TenureError> {
        let mut stores: Vec<&Arc<Store>> = Vec::new();
        for store in [&self.lock, &self.election, &self.read_write, &self.semaphore].into_iter().flatten() {
            if !stores.iter().any(|seen| Arc::ptr_eq(seen, store)) {
                stores.push(store);
            }
        }
        let judged: Vec<(String, Reach)> = stores
            .iter()
            .filter_map(|store| {
                let reach = store.scope().and_then(|scope| Reach::parse(&scope))?;
                Some((format!("the {} store", store.kind()), reach))
            })
            .collect();
        let owner = format!("Coordination(\"{}\")", self.name);
        let environment = tenure::process_env().get("GREL_ENVIRONMENT").map(str::to_owned);
        match judge(&owner, &judged, self.requires, environment.as_deref()) {
            Verdict::Fine => Ok(()),
            Verdict::Refused(message) => Err(tenure::Error::BackendScope { message }.into()),
            Verdict::Warned { unknown_environment, message } => {
                if let Some(unknown) = unknown_environment {
                    tracing::warn!(target: "tenure", "{unknown}");
                }
                tracing::warn!(target: "tenure", "{message}");
                Ok(())
            }
        }
    }
}
