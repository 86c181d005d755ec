//! The stores, opened from a URL through `tenure-open` (the one scheme table).

use napi::Env;
use napi_derive::napi;
use tenure_open::{Backends, Origin, Store, Target};

use crate::event_loop::{Inbox, JsDial};
use crate::fail::{Fail, sync};
use crate::promise::{Settled, promise};

/// An open store: a built-in one, or a backend a user wrote in JavaScript (with the reach it
/// declares, `scope`, if any).
#[napi]
pub struct Backend(pub(crate) Backends<Option<String>>);

#[napi]
impl Backend {
    /// The kind of store: `memory`, `sqlite`, `redis`, `postgres`, `etcd`, or `user` (written in
    /// JavaScript).
    #[napi(getter)]
    pub fn kind(&self) -> String {
        self.0.kind()
    }

    /// How far its locks exclude: `process` (memory), `host` (SQLite) or `cluster`; a user's
    /// backend's declared `scope`, or `null` if it declares none.
    #[napi(getter)]
    pub fn scope(&self) -> Option<String> {
        match self.0.origin() {
            Origin::User(scope) => scope.clone(),
            Origin::Store(_) => self.0.reach(),
        }
    }

    /// Closes the store (SQLite vacates expired leases); later calls fail. A user's backend is
    /// the user's to close.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Settled<'env, ()>> {
        let store = self.0.closer();
        promise(env, async move {
            match store {
                Some(store) => store.close().await.map_err(Fail::Store),
                None => Ok(()),
            }
        })
    }
}

/// The workspace version the addon was built from; `lib/` refuses an addon of another version.
#[napi]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// A store in this process's memory.
#[napi]
pub fn memory_backend() -> Backend {
    Backend(Backends::store(Store::memory()))
}

/// Opens the store at `url` (`memory:`, `sqlite:///path.db`, `redis://…`, `postgresql://…`,
/// `etcd://…`). A Redis or PostgreSQL store's TCP connections are watched by this thread's event
/// loop; etcd's gRPC client runs on the addon's runtime.
#[napi]
pub fn open_backend<'env>(env: &'env Env, url: String) -> napi::Result<Settled<'env, Backend>> {
    let target = sync(Target::from_url(&url).map_err(|e| Fail::Core(tenure::Error::Settings(e))))?;
    let dial = JsDial::new(Inbox::of(env.raw())?);
    promise(env, async move { Ok(Backend(Backends::store(target.open(dial).await?))) })
}

/// The store opener's judgement of backends' reach (`tenure_open::reach::judge`): `['fine']`,
/// `['refused', message]` or `['warned', message, unknownEnvironmentMessage?]`. `backends` are
/// `[label, scope]` pairs.
#[napi]
pub fn judge_reach(
    owner: String,
    backends: Vec<(String, String)>,
    requires: String,
    environment: Option<String>,
) -> napi::Result<Vec<String>> {
    use tenure_open::reach::{Reach, Verdict, judge};
    let reach = |text: &str| {
        Reach::parse(text).ok_or_else(|| {
            Fail::Core(tenure::Error::Settings(tenure::core::SettingsError::field(
                "requires",
                "requires must be one of process, host, cluster",
            )))
        })
    };
    let judged =
        backends.into_iter().map(|(label, scope)| Ok((label, reach(&scope)?))).collect::<Result<Vec<_>, Fail>>();
    let judged = sync(judged)?;
    let requires = sync(reach(&requires))?;
    Ok(match judge(&owner, &judged, requires, environment.as_deref()) {
        Verdict::Fine => vec!["fine".to_owned()],
        Verdict::Refused(message) => vec!["refused".to_owned(), message],
        Verdict::Warned { unknown_environment, message } => {
            let mut verdict = vec!["warned".to_owned(), message];
            verdict.extend(unknown_environment);
            verdict
        }
    })
}
