//! Which store a command talks to: a URL (`--backend`, else `TENURE_BACKEND`), or the default
//! SQLite file in the user's state directory. `tenure-open` reads and opens it.

use std::path::{Path, PathBuf};

use tenure_open::{Keywords, OpenError, Target, resolve_url, shown_url};
pub(crate) use tenure_open::{Store, StoreKind};

use crate::Failure;

/// The URL of the store to use: `backend`, else `TENURE_BACKEND`, else the default one.
pub(crate) fn url(backend: Option<&str>) -> Result<String, Failure> {
    match backend.map(str::to_owned).or_else(|| std::env::var("TENURE_BACKEND").ok().filter(|u| !u.is_empty())) {
        Some(url) => Ok(url),
        None => default_url(),
    }
}

/// The store `url` names, read but not opened. Bad URLs are usage errors (exit 2).
pub(crate) fn target(url: &str) -> Result<Target, Failure> {
    Target::from_url(url).map_err(|e| Failure::usage(format!("--backend: {e}")))
}

/// Opens the store `backend` names (see [`url`]); a SQLite file's directory is made if missing.
pub(crate) async fn open(backend: Option<&str>) -> Result<Store, Failure> {
    let url = url(backend)?;
    let target = target(&url)?;
    if let Some(dir) = target.file().and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::store(format!("cannot create {} for the SQLite store: {e}", dir.display())))?;
    }
    target.open(tenure_tokio::Tokio::current()).await.map_err(|e| match e {
        OpenError::Settings(e) => Failure::usage(format!("--backend: {e}")),
        e => Failure::store(format!("cannot open {}: {e}", shown_url(&url))),
    })
}

/// Closes `store` (SQLite vacates expired leases first); a failure to do so changes nothing
/// for the command, whose leases are already settled.
pub(crate) async fn close(store: &Store) {
    let _ = store.close().await;
}

/// The URL of `$XDG_STATE_HOME/tenure/tenure.db` (or `~/.local/state/tenure/tenure.db`).
pub(crate) fn default_url() -> Result<String, Failure> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state")))
        .ok_or_else(|| {
            Failure::usage(
                "no store given and no home directory for the default one: pass --backend URL or set TENURE_BACKEND",
            )
        })?;
    let mut keywords = Keywords::default();
    keywords.path = Some(state.join("tenure").join("tenure.db"));
    resolve_url(StoreKind::Sqlite, &keywords, "", &tenure::core::EnvVars::new())
        .map_err(|e| Failure::usage(format!("the default store: {e}")))
}
