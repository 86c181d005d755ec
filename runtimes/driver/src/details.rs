//! Holder details: who holds a lease, for people (`tenure locks`, `lock.state()`). A holder
//! sends them with its acquires — its host, pid and program, and the purpose its user gave — as
//! one JSON text ([`HolderDetails`]); the store keeps them beside a new grant, with when it
//! granted it, and a listing reads them back as a [`HolderInfo`].

use std::borrow::Cow;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde::{Deserialize, Serialize};
use std::time::Duration;

use tenure_core::{BackendError, BackendErrorKind, Error, FencingToken, HolderDetails, Key, WallTime};

use crate::backend::LockBackend;
use crate::runtime::Runtime;

/// Who holds a lease, as its holder told the store when the lease was granted. A lease taken
/// by a grelmicro process (or any holder that sends none) has no details.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderInfo {
    /// The holder's host name.
    pub host: String,
    /// The holder's process id.
    pub pid: u32,
    /// The holder's program (`python3 worker.py`, `node server.mjs`, `tenure`).
    pub program: String,
    /// What the holder said it holds the lease for, if it said.
    pub purpose: Option<String>,
    /// When the store granted the lease (by the store's clock, or the holder's where the store
    /// has none to read).
    pub acquired_at: WallTime,
}

/// A lock or task lock as people ask about it ([`crate::Lock::state`]): who holds it, since when
/// and until when, never its token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInfo {
    /// The lock name.
    pub name: String,
    /// The last fencing token the store issued for the name (kept after release, except where a
    /// fence is a holder's revision), if any.
    pub fencing_token: Option<FencingToken>,
    /// The worker of the live holder (`tenure-revoked` while a revocation holds it); `None` when
    /// free.
    pub worker: Option<String>,
    /// When the live lease ends, by the store's clock.
    pub expires_at: Option<WallTime>,
    /// What the holder told the store: host, pid, program, purpose, when acquired.
    pub details: Option<HolderInfo>,
    /// Who waits for it, first in line first; `None` where the store keeps no line (its waiters
    /// poll or are woken; a user-written store).
    pub waiting: Option<Vec<WaiterInfo>>,
}

/// One in a lock's waiting line, as people ask about it: never its token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaiterInfo {
    /// The waiter's worker.
    pub worker: String,
    /// Since when it waits, where the store keeps that.
    pub since: Option<WallTime>,
    /// What it told the store, if anything.
    pub details: Option<HolderInfo>,
}

impl LockInfo {
    /// Whether a lease is live.
    pub fn held(&self) -> bool {
        self.worker.is_some()
    }
}

/// The state of the lock `key`, read within `timeout` ([`crate::Lock::state`],
/// [`crate::TaskLock::state`]); a store that cannot tell is [`Error::LockedCheck`].
pub(crate) async fn lock_info<R: Runtime>(
    runtime: &R,
    backend: &dyn LockBackend,
    key: &Key,
    timeout: Duration,
) -> Result<LockInfo, Error> {
    let name = key.name_str().to_owned();
    let failed = |cause| Error::LockedCheck { name: name.clone(), cause };
    let Some(read) = backend.lock_state(key.as_str()) else {
        let why = "this store cannot tell who holds a lock (a user-written backend lists no holders)";
        return Err(failed(BackendError::new(BackendErrorKind::Rejected, why)));
    };
    let state = match runtime.timeout_at(runtime.now() + timeout, read).await {
        Some(state) => state.map_err(failed)?,
        None => return Err(failed(BackendError::timeout(timeout))),
    };
    let Some(state) = state.filter(|s| s.key == key.as_str()) else {
        // Nothing stored under the name: free, nobody waiting.
        return Ok(LockInfo {
            name,
            fencing_token: None,
            worker: None,
            expires_at: None,
            details: None,
            waiting: None,
        });
    };
    let worker = |token: &str| tenure_core::holder_worker(token).to_owned();
    let waiting = state.waiting.map(|line| {
        line.into_iter().map(|w| WaiterInfo { worker: worker(&w.token), since: w.since, details: w.details }).collect()
    });
    Ok(LockInfo {
        fencing_token: state.fence,
        worker: state.holder.as_deref().map(worker),
        expires_at: state.expires_at,
        details: state.details,
        waiting,
        name,
    })
}

/// The stored text (borrowed where it needs no unescaping).
#[derive(Serialize, Deserialize)]
struct Text<'a> {
    #[serde(borrow)]
    host: Cow<'a, str>,
    pid: u32,
    #[serde(borrow)]
    program: Cow<'a, str>,
    #[serde(borrow, skip_serializing_if = "Option::is_none")]
    purpose: Option<Cow<'a, str>>,
}

impl HolderInfo {
    /// Reads details a store kept (`None` if they are not a holder's details: another writer's).
    /// Whoever can write to the store could write anything: control characters (a terminal's
    /// escapes, as JSON `\u001b`) come out as `?`, and each field at most 256 bytes.
    pub fn parse(text: &str, acquired_at: WallTime) -> Option<Self> {
        let read: Text<'_> = serde_json::from_str(text).ok()?;
        Some(Self {
            host: clean(&read.host, 256),
            pid: read.pid,
            program: clean(&read.program, 256),
            purpose: read.purpose.map(|p| clean(&p, 256)),
            acquired_at,
        })
    }
}

/// This process's host name and program, read once.
fn process() -> &'static (String, String) {
    static PROCESS: OnceLock<(String, String)> = OnceLock::new();
    PROCESS.get_or_init(|| (clean(&host(), 200), clean(&program(&std::env::args_os().collect::<Vec<_>>()), 200)))
}

/// The host name: the kernel's (Linux), else `$HOSTNAME`, else `unknown`.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|name| !name.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The program's name, and the script an interpreter runs (`python3 worker.py`).
fn program(args: &[std::ffi::OsString]) -> String {
    let base = |arg: &std::ffi::OsString| {
        Path::new(arg).file_name().map_or_else(|| arg.to_string_lossy(), OsStr::to_string_lossy).into_owned()
    };
    let Some(first) = args.first().map(base) else { return "unknown".to_owned() };
    // (`python3.14`, `node`, `pypy3`: an interpreter's name and its version; not `nodetool`)
    let stem = first.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let interpreter = ["python", "pypy", "node", "nodejs", "bun", "deno", "ruby", "perl"].contains(&stem);
    match args.get(1) {
        Some(script) if interpreter && !script.to_string_lossy().starts_with('-') => {
            format!("{first} {}", base(script))
        }
        _ => first,
    }
}

/// Control characters replaced, and at most `max` bytes (details are bounded).
fn clean(text: &str, max: usize) -> String {
    let mut out: String = text.chars().map(|c| if c.is_control() { '?' } else { c }).collect();
    if out.len() > max {
        let mut end = max;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    out
}

/// A primitive's details: its purpose, and the JSON text sent with acquires, built again only
/// when the pid changes (a forked child).
#[derive(Default)]
pub(crate) struct Details {
    state: Mutex<State>,
}

/// The purpose, and the text last built with the pid it was built in.
type State = (Option<Arc<str>>, Option<(u32, HolderDetails)>);

impl Details {
    /// Says what the primitive is held for (checked: [`tenure_core::store::check_purpose`]).
    pub(crate) fn set_purpose(&self, purpose: Option<&str>) -> Result<(), Error> {
        purpose.map(tenure_core::store::check_purpose).transpose()?;
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = (purpose.map(Arc::from), None);
        Ok(())
    }

    pub(crate) fn purpose(&self) -> Option<Arc<str>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).0.clone()
    }

    /// The text to send with an acquire.
    pub(crate) fn get(&self) -> Option<HolderDetails> {
        let pid = std::process::id();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((built_for, details)) = &state.1
            && *built_for == pid
        {
            return Some(details.clone());
        }
        let (host, program) = process();
        let (host, program) = (Cow::Borrowed(host.as_str()), Cow::Borrowed(program.as_str()));
        let text = Text { host, pid, program, purpose: state.0.as_deref().map(Cow::Borrowed) };
        // (cannot fail: strings and a number; bounded: 200 + 200 + 256 bytes and the names)
        let details = serde_json::to_string(&text).ok().and_then(|json| HolderDetails::new(&json).ok())?;
        state.1 = Some((pid, details.clone()));
        Some(details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_read_back_and_name_the_process() {
        let details = Details::default();
        details.set_purpose(Some("nightly \"export\"")).expect("a purpose");
        let text = details.get().expect("details");
        let info = HolderInfo::parse(text.as_str(), WallTime::UNIX_EPOCH).expect("read back");
        assert_eq!(info.pid, std::process::id());
        assert_eq!(info.purpose.as_deref(), Some("nightly \"export\""));
        assert!(!info.host.is_empty() && !info.program.is_empty());
        assert!(details.set_purpose(Some("")).is_err());
        assert!(details.set_purpose(Some(&"x".repeat(257))).is_err());
        assert_eq!(details.purpose().as_deref(), Some("nightly \"export\""));
        assert!(HolderInfo::parse("not json", WallTime::UNIX_EPOCH).is_none());
        let args = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(program(&args(&["/usr/bin/python3.14", "/srv/app/worker.py", "-v"])), "python3.14 worker.py");
        assert_eq!(program(&args(&["/usr/bin/python3", "-m", "app"])), "python3");
        assert_eq!(program(&args(&["/usr/local/bin/tenure", "lock", "x"])), "tenure");
        assert_eq!(program(&args(&["/usr/bin/nodetool", "--password-file", "secret"])), "nodetool");
        assert_eq!(program(&args(&["/usr/bin/bundle", "exec", "rake"])), "bundle");
        assert_eq!(program(&args(&["/usr/bin/node", "server.mjs"])), "node server.mjs");
        let escaped = r#"{"host":"h\u001b[2J","pid":1,"program":"p","purpose":"x\ny"}"#;
        let read = HolderInfo::parse(escaped, WallTime::UNIX_EPOCH).expect("read");
        assert_eq!((read.host.as_str(), read.purpose.as_deref()), ("h?[2J", Some("x?y")));
        assert_eq!(program(&args(&[])), "unknown");
        assert_eq!(clean("a\tb", 200), "a?b");
        assert_eq!(clean(&"é".repeat(150), 200).len(), 200);
    }
}
