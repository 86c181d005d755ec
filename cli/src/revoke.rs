//! `tenure revoke NAME [--reason TEXT]`: takes a lock away from its holder, safely. In one atomic
//! step the store advances the lock's fence and puts a placeholder in the holder's place until the
//! revoked lease would have ended (the core's `store::revoke`): the holder's next renewal fails
//! and it is told why (cause `revoked`), a resource that checks fences refuses its writes from
//! the new fence on, and nobody else holds the lock while the revoked holder could still count on
//! it.

use clap::Args;
use serde_json::json;
use tenure::core::{Key, Revocation, RevokeReason, StoreOp, StoreReply};

use crate::store::{self, StoreKind};
use crate::{Failure, say};

/// Exit code: nobody held the name; nothing was revoked.
pub(crate) const EXIT_NOT_HELD: i32 = 3;

#[derive(Args, Debug)]
pub(crate) struct RevokeArgs {
    /// The lock name (a task lock's with --task).
    pub(crate) name: String,
    /// Why, told to the revoked holder and shown by `tenure locks` until the lock is free
    /// (at most 256 bytes, no control characters; default "revoked by an operator").
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: Option<String>,
    /// NAME is a task lock (`tenure task`, TaskLock), not a lock.
    #[arg(long)]
    pub(crate) task: bool,
    /// One JSON document on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) async fn run(backend: Option<&str>, args: RevokeArgs) -> Result<i32, Failure> {
    let name = tenure::Name::new(&args.name).map_err(|e| Failure::from_error(&e))?;
    let reason = match &args.reason {
        Some(text) => RevokeReason::new(text).map_err(|e| Failure::usage(format!("--reason: {e}")))?,
        None => RevokeReason::default(),
    };
    let url = store::url(backend)?;
    if store::target(&url)?.kind() == StoreKind::Memory {
        return Err(Failure::usage("memory: holds nothing outside the process that uses it; give a shared store"));
    }
    let kind = if args.task { "tasklock" } else { "lock" };
    let key = Key::parse(&format!("{kind}:{name}")).map_err(|e| Failure::from_error(&e))?;
    let store = store::open(backend).await?;
    let answer = store.locks().execute(StoreOp::LockRevoke { key: key.clone(), reason: reason.clone() }).await;
    let shared =
        if matches!(answer, Ok(StoreReply::Revocation(None))) { shared_holders(&store, &name).await } else { None };
    // Revoked already: the reason that stands is the first revocation's, kept in its placeholder
    // (unknown if the store cannot list it, or the placeholder is gone or another's).
    let reason = match &answer {
        Ok(StoreReply::Revocation(Some(r))) if r.already => standing_reason(&store, &key, r.revoked_fence).await,
        _ => Some(reason),
    };
    store::close(&store).await;
    let revocation = match answer {
        Ok(StoreReply::Revocation(revocation)) => revocation,
        Ok(other) => {
            return Err(Failure::store(format!("revoking {kind} {name}: the store answered {}", other.shape())));
        }
        Err(e) => return Err(Failure::store(format!("revoking {kind} {name}: {e}"))),
    };
    let Some(r) = revocation else {
        let why = shared.unwrap_or_else(|| format!("nobody holds {kind} {name}: nothing to revoke"));
        if args.json {
            print_json(&json!({ "kind": kind, "name": args.name, "revoked": false, "why": why }));
        }
        say!("{why}");
        return Ok(EXIT_NOT_HELD);
    };
    if args.json {
        print_json(&document(kind, &args.name, reason.as_ref(), &r));
    } else {
        #[allow(clippy::print_stdout)]
        {
            println!("{}", sentence(kind, &args.name, reason.as_ref(), &r));
        }
    }
    Ok(0)
}

/// The reason of the revocation of `revoked` whose placeholder holds `key` now, if the store
/// lists it.
async fn standing_reason(store: &store::Store, key: &Key, revoked: tenure::FencingToken) -> Option<RevokeReason> {
    let states = store.inspect()?.lock_states(vec![key.as_str().to_owned()]).await.ok()?;
    let holder = states.into_iter().find(|s| s.key == key.as_str())?.holder?;
    RevokeReason::of_placeholder(&holder).filter(|(fence, _)| *fence == revoked).map(|(_, reason)| reason)
}

/// What people are told.
fn sentence(kind: &str, name: &str, reason: Option<&RevokeReason>, r: &Revocation) -> String {
    let left = r.left.as_secs_f64();
    if r.already {
        let why = reason.map_or_else(|| "its reason could not be read".to_owned(), |r| r.as_str().to_owned());
        return format!(
            "{kind} {name} was revoked already (fence {} revoked: {why}; fence now {}); it is free again in {left:.1}s",
            r.revoked_fence.get(),
            r.fence.get()
        );
    }
    format!(
        "revoked {kind} {name} from {} (fence {}); the fence is now {}: a resource that checks fences refuses \
         fence {} from now on. The holder is told at its next renewal; the lock is free again in {left:.1}s, when \
         the revoked lease would have ended.",
        r.holder,
        r.revoked_fence.get(),
        r.fence.get(),
        r.revoked_fence.get()
    )
}

fn document(kind: &str, name: &str, reason: Option<&RevokeReason>, r: &Revocation) -> serde_json::Value {
    json!({
        "kind": kind,
        "name": name,
        "revoked": !r.already,
        "already_revoked": r.already,
        "holder": r.holder,
        "revoked_fencing_token": r.revoked_fence.get(),
        "fencing_token": r.fence.get(),
        "free_in_s": r.left.as_secs_f64(),
        "reason": reason.map(RevokeReason::as_str),
    })
}

fn print_json(doc: &serde_json::Value) {
    #[allow(clippy::print_stdout)]
    {
        println!("{doc}");
    }
}

/// When no lock `name` is held: what holds a read-write lock or semaphore of that name, which
/// cannot be revoked yet.
async fn shared_holders(store: &store::Store, name: &tenure::Name) -> Option<String> {
    let inspect = store.inspect()?;
    let keys = vec![format!("rwlock:{name}"), format!("semaphore:{name}")];
    let states = inspect.shared_states(keys).await.ok()?;
    let held = states.into_iter().find(|s| !s.holders.is_empty())?;
    let (kind, _) = crate::listing::split(&held.key);
    let holders: Vec<String> = held
        .holders
        .iter()
        .map(|h| format!("{} ({})", tenure::backend::holder_worker(&h.token), h.side.as_str()))
        .collect();
    Some(format!(
        "no lock {name} is held, but the {kind} {name} is, by {}: revoking read-write locks and semaphores is not \
         supported yet (end that holder's process, or wait for its lease to end)",
        holders.join(", ")
    ))
}
