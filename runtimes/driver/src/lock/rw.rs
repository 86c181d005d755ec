//! `ReadWriteLock`: many readers or one writer (spec §1.9), its two sides run by the same
//! holders as [`Lock`] on the read or the write lease of one `rwlock:` key.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tenure_core::{
    Access, Error, FencingToken, HolderKind, LockConfig, LockConfigBuilder, LockHandle, Name, Query, RwState,
    Timestamp, WorkerId,
};

use super::builder::lock_config_setters;
use super::{Lock, LockGuard, LockHolder};
use crate::backend::{LockBackend, ReadWriteLockBackend};
use crate::builder::{Common, ResolveConfig, common_setters, config_setters};
use crate::keep_alive::{KeepAlive, Keepable, Renew, Sealed};
use crate::runtime::Runtime;

/// A distributed read-write lock: any number of readers, or one writer, per name across every
/// process sharing the backend. Writer-preferring: a writer that waits keeps an intent in the
/// store that holds new readers out (readers already in finish). A writer's fencing token
/// strictly increases per name; a reader's guard carries the generation it reads — the
/// fencing token of the last write — so a reader can tell whether a write landed between two
/// reads. grelmicro 0.44's `ReadWriteLock`, on the same store layouts.
///
/// ```
/// # use tenure::{MemoryBackend, ReadWriteLock};
/// # async fn example<R: tenure::Runtime>(runtime: R) -> Result<(), tenure::Error> {
/// let lock = ReadWriteLock::builder("catalog", runtime).backend(MemoryBackend::new()).build()?;
/// let writing = lock.write().acquire().await?;
/// println!("write under fencing token {}", writing.fencing_token());
/// let reading = writing.downgrade().await?; // no writer gets in between
/// println!("reading generation {}", reading.generation());
/// reading.release().await?;
/// # Ok(()) }
/// ```
pub struct ReadWriteLock<R: Runtime> {
    read: Lock<R>,
    write: Lock<R>,
}

impl<R: Runtime> ReadWriteLock<R> {
    /// Starts building the read-write lock `name` on `runtime`. Unset settings come from
    /// `GREL_READWRITELOCK_*` environment variables, then grelmicro's defaults (a lock's).
    pub fn builder(name: &str, runtime: R) -> ReadWriteLockBuilder<R> {
        ReadWriteLockBuilder { common: Common::new(name, runtime), config: LockConfig::builder(), purpose: None }
    }

    /// The read-write lock `name` with exactly `config` (no environment), on `backend`.
    pub fn from_config(
        name: &str,
        config: LockConfig,
        backend: Arc<dyn ReadWriteLockBackend>,
        runtime: R,
    ) -> Result<Self, Error> {
        Ok(Self::assemble(&Name::new(name)?, config, backend, runtime))
    }

    fn assemble(name: &Name, config: LockConfig, backend: Arc<dyn ReadWriteLockBackend>, runtime: R) -> Self {
        let backend: Arc<dyn LockBackend> = Arc::new(Sides(backend));
        let config = Arc::new(std::sync::Mutex::new(Arc::new(config)));
        let read = Lock::assemble_as(name, Access::Read, config.clone(), backend.clone(), runtime.clone());
        let write = Lock::assemble_as(name, Access::Write, config, backend, runtime);
        Self { read, write }
    }

    /// The lock name.
    pub fn name(&self) -> &Name {
        self.read.name()
    }

    /// The configuration in use.
    pub fn config(&self) -> LockConfig {
        self.read.config()
    }

    /// Swaps the configuration of both sides, which share it (see [`Lock::reconfigure`]).
    pub fn reconfigure(&self, config: LockConfig) -> Result<(), Error> {
        self.read.reconfigure(config)
    }

    /// Says what the lock is held for ("catalog rebuild"): shown with each reader's and the
    /// writer's host, pid and program by `tenure locks`, from the next acquisition on (see
    /// [`Lock::set_purpose`]).
    pub fn set_purpose(&self, purpose: Option<&str>) -> Result<(), Error> {
        self.read.set_purpose(purpose)?;
        self.write.set_purpose(purpose)
    }

    /// The purpose given ([`ReadWriteLock::set_purpose`]).
    pub fn purpose(&self) -> Option<String> {
        self.read.purpose()
    }

    /// The read side: shared with other readers, refused while a writer holds or waits.
    pub fn read(&self) -> ReadSide<R> {
        ReadSide { lock: self.read.clone() }
    }

    /// The write side: alone, once the readers in have left. A task holding a read lease that
    /// waits for the write side waits for itself (its intent holds new readers out meanwhile):
    /// release first, or take the write side and [`WriteGuard::downgrade`].
    pub fn write(&self) -> WriteSide<R> {
        WriteSide { lock: self.write.clone() }
    }

    /// What holds the lock now: the generation, whether a writer writes, how many read, how
    /// many writers wait ([`Error::OwnedCheck`] if the store fails, as grelmicro's).
    pub async fn state(&self) -> Result<RwState, Error> {
        let shared = &self.read.shared;
        let (query, request) = Query::state(&shared.key, self.read.now(), self.read.backend_timeout());
        let answer = super::ask_answer(&shared.runtime, &shared.exec(), query, request).await?;
        // (The query checked the shape of the answer.)
        Ok(Query::state_of(&answer).unwrap_or_default())
    }
}

impl<R: Runtime> Clone for ReadWriteLock<R> {
    fn clone(&self) -> Self {
        Self { read: self.read.clone(), write: self.write.clone() }
    }
}

impl<R: Runtime> std::fmt::Debug for ReadWriteLock<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteLock").field("name", self.name()).finish_non_exhaustive()
    }
}

super::holders_backend!(
    /// The read-write store as the lock holders' backend: its operations, its wake-ups, no queue.
    Sides(ReadWriteLockBackend)
);

/// Which side a view, a guard or a holder is on: the acquisitions of a [`Lock`] with this
/// access, wrapped in `G`.
macro_rules! side {
    ($(#[$doc:meta])* $side:ident, $guard:ident) => {
        $(#[$doc])*
        pub struct $side<R: Runtime> {
            lock: Lock<R>,
        }

        impl<R: Runtime> $side<R> {
            /// Waits until this side is acquired, retrying every jittered `retry_interval` (and
            /// at once when the store pushes a release).
            pub async fn acquire(&self) -> Result<$guard<R>, Error> {
                self.lock.acquire().await.map($guard::of)
            }

            /// Like [`Self::acquire`], giving up with [`Error::Timeout`] after `timeout` (a
            /// writer then withdraws its intent).
            pub async fn acquire_timeout(&self, timeout: Duration) -> Result<$guard<R>, Error> {
                self.lock.acquire_timeout(timeout).await.map($guard::of)
            }

            /// One attempt: [`Error::WouldBlock`] if the other side (or, for a writer, another
            /// writer) holds the lock. A writer's single attempt keeps no intent.
            pub async fn acquire_nowait(&self) -> Result<$guard<R>, Error> {
                self.lock.acquire_nowait().await.map($guard::of)
            }

            /// A new holder of this side (an async task's identity), for code that keeps one
            /// per task (grelmicro's re-entrancy check, the Python binding).
            pub fn holder(&self) -> LockHolder<R> {
                self.lock.holder()
            }

            /// A new holder with a thread's identity (see [`Lock::thread_holder`]).
            pub fn thread_holder(&self) -> LockHolder<R> {
                LockHolder::new(self.lock.clone(), HolderKind::Thread)
            }
        }

        impl<R: Runtime> Clone for $side<R> {
            fn clone(&self) -> Self {
                Self { lock: self.lock.clone() }
            }
        }

        impl<R: Runtime> std::fmt::Debug for $side<R> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($side)).field("name", self.lock.name()).finish_non_exhaustive()
            }
        }

        impl<R: Runtime> $guard<R> {
            /// The handle: name, ownership token and fencing token (a reader's: the generation).
            pub fn handle(&self) -> &LockHandle {
                self.inner.handle()
            }

            /// The lock name.
            pub fn name(&self) -> &Name {
                self.inner.name()
            }

            /// Whether the lease may still be counted on now.
            pub fn is_valid(&self) -> bool {
                self.inner.is_valid()
            }

            /// Until when the lease may be counted on (see [`LockGuard::valid_until`]).
            pub fn valid_until(&self) -> Option<Timestamp> {
                self.inner.valid_until()
            }

            /// Renews the lease for another `lease_duration` ([`Error::NotOwned`] if it was
            /// lost).
            pub async fn extend(&mut self) -> Result<&LockHandle, Error> {
                self.inner.extend().await
            }

            /// Releases the lease ([`Error::NotOwned`] if it had already run out or gone).
            pub async fn release(self) -> Result<(), Error> {
                self.inner.release().await
            }

            /// Whether the store still has this guard's token on this side.
            pub async fn owned(&self) -> Result<bool, Error> {
                self.inner.owned().await
            }

            /// Completes when the lease is lost: it ran out before an extend, an extend found it
            /// gone, or it was released.
            pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<R> {
                self.inner.lost()
            }

            /// Keeps the lease alive in the background (see [`LockGuard::keep_alive`]).
            pub fn keep_alive(self, max_hold: Duration) -> KeepAlive<Self> {
                KeepAlive::new(self, max_hold)
            }

            /// The holder behind this guard.
            pub fn holder(&self) -> &LockHolder<R> {
                self.inner.holder()
            }

            /// The lock guard underneath: the same lease, for code that handles both sides
            /// alike (a binding's guard).
            pub fn into_lock_guard(self) -> LockGuard<R> {
                self.inner
            }
        }

        impl<R: Runtime> Sealed for $guard<R> {
            fn lease_of(&self) -> Arc<dyn Renew> {
                self.inner.lease_of()
            }
        }

        impl<R: Runtime> Keepable for $guard<R> {
            type Runtime = R;

            fn runtime(&self) -> &R {
                Keepable::runtime(&self.inner)
            }

            fn lost(&self) -> impl Future<Output = ()> + Send + 'static + use<R> {
                self.inner.lost()
            }
        }
    };
}

side! {
    /// The read side of a [`ReadWriteLock`] ([`ReadWriteLock::read`]).
    ReadSide, ReadGuard
}

side! {
    /// The write side of a [`ReadWriteLock`] ([`ReadWriteLock::write`]).
    WriteSide, WriteGuard
}

/// A held read lease. Dropping it without [`ReadGuard::release`] releases in the background.
#[must_use = "dropping the guard releases the read lease"]
pub struct ReadGuard<R: Runtime> {
    inner: LockGuard<R>,
}

impl<R: Runtime> ReadGuard<R> {
    fn of(inner: LockGuard<R>) -> Self {
        Self { inner }
    }

    /// The generation this read observes: the fencing token of the last write granted before
    /// it (0 for a name never written). Compare it across two reads to tell whether a writer
    /// landed in between.
    pub fn generation(&self) -> FencingToken {
        self.inner.fencing_token()
    }
}

/// The held write lease. Send [`WriteGuard::fencing_token`] with every write it protects.
/// Dropping it without [`WriteGuard::release`] releases in the background.
#[must_use = "dropping the guard releases the write lease"]
pub struct WriteGuard<R: Runtime> {
    inner: LockGuard<R>,
    poisoned: bool,
}

impl<R: Runtime> WriteGuard<R> {
    fn of(inner: LockGuard<R>) -> Self {
        let poisoned = inner.holder().poisoned();
        Self { inner, poisoned }
    }

    /// The fencing token of this write: strictly greater than every earlier write's. An extend
    /// that found the lease lapsed and granted again carries a new one (and `poisoned`).
    pub fn fencing_token(&self) -> FencingToken {
        self.inner.fencing_token()
    }

    /// Whether the writer before this one let its lease run out without releasing (what it
    /// protected may be half written), or this lease itself lapsed and was granted again by an
    /// extend. (grelmicro keeps it readable after release; here release consumes the guard:
    /// read it first.)
    pub fn poisoned(&self) -> bool {
        self.poisoned || self.inner.holder().poisoned()
    }

    /// Turns the write lease into a read lease in one step: no other writer takes the lock in
    /// between. [`Error::NotOwned`] if the write lease was gone; a failed call leaves its
    /// outcome unknown (the guard's release then gives back both sides).
    pub async fn downgrade(self) -> Result<ReadGuard<R>, Error> {
        let mut inner = self.inner;
        inner.downgrade().await?;
        Ok(ReadGuard { inner })
    }
}

impl<R: Runtime> std::fmt::Debug for ReadGuard<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadGuard").field("handle", self.handle()).field("valid", &self.is_valid()).finish()
    }
}

impl<R: Runtime> std::fmt::Debug for WriteGuard<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteGuard")
            .field("handle", self.handle())
            .field("poisoned", &self.poisoned())
            .field("valid", &self.is_valid())
            .finish()
    }
}

/// Builds a [`ReadWriteLock`]. Settings left unset come from the environment
/// (`GREL_READWRITELOCK_{NAME}_*`, then `GREL_READWRITELOCK_*`, gated by `GREL_ENV_LOAD`), then
/// from grelmicro's defaults.
#[must_use]
pub struct ReadWriteLockBuilder<R: Runtime> {
    common: Common<dyn ReadWriteLockBackend, R>,
    config: LockConfigBuilder,
    purpose: Option<String>,
}

impl<R: Runtime> ReadWriteLockBuilder<R> {
    common_setters!(ReadWriteLockBackend);

    lock_config_setters!();

    /// What the lock is held for, shown with its holders ([`ReadWriteLock::set_purpose`]).
    pub fn purpose(mut self, purpose: &str) -> Self {
        self.purpose = Some(purpose.to_owned());
        self
    }

    /// Validates the name and every setting and builds the read-write lock.
    pub fn build(self) -> Result<ReadWriteLock<R>, Error> {
        let built = self.common.build("ReadWriteLock", ReadWriteConfig(self.config))?;
        let lock = ReadWriteLock::assemble(&built.name, built.config, built.backend, built.runtime);
        lock.set_purpose(self.purpose.as_deref())?;
        Ok(lock)
    }
}

impl<R: Runtime> std::fmt::Debug for ReadWriteLockBuilder<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteLockBuilder").field("name", &self.common.name).finish_non_exhaustive()
    }
}

/// A lock's configuration, read from the read-write lock's variables.
struct ReadWriteConfig(LockConfigBuilder);

impl ResolveConfig for ReadWriteConfig {
    type Config = LockConfig;

    fn resolve(
        self,
        name: &str,
        env: &tenure_core::EnvVars,
        options: &tenure_core::EnvOptions,
    ) -> Result<tenure_core::Resolved<LockConfig>, Error> {
        self.0.resolve_kind(LockConfig::READ_WRITE_ENV_KIND, name, env, options, &mut rand::rng())
    }
}
