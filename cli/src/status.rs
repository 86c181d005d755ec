//! `tenure status`: what the store holds, for people (a table) or programs (`--json`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tenure::backend::holder_worker;
use tenure::{LeaderState, LockState};

use crate::listing::seconds_until;
use crate::store;
use crate::{Failure, StatusArgs};

pub(crate) async fn run(backend: Option<&str>, args: StatusArgs) -> Result<i32, Failure> {
    for name in &args.names {
        tenure::Name::new(name).map_err(|e| Failure::from_error(&e))?;
    }
    let store = store::open(backend).await?;
    let Some(inspect) = store.inspect() else {
        return Err(Failure::usage("memory: holds nothing outside the process that uses it; give a shared store"));
    };
    let lock_keys: Vec<String> =
        args.names.iter().flat_map(|n| [format!("lock:{n}"), format!("tasklock:{n}")]).collect();
    let leader_keys: Vec<String> = args.names.iter().map(|n| format!("leader:{n}")).collect();
    let locks = inspect.lock_states(lock_keys).await.map_err(|e| Failure::store(format!("reading locks: {e}")))?;
    let leaders =
        inspect.leader_states(leader_keys).await.map_err(|e| Failure::store(format!("reading leaders: {e}")))?;
    store::close(&store).await;
    let now = now_micros();
    if args.json {
        let doc = json!({
            "locks": locks.iter().map(|l| lock_json(l, now)).collect::<Vec<_>>(),
            "leaders": leaders.iter().map(|l| leader_json(l, now)).collect::<Vec<_>>(),
        });
        #[allow(clippy::print_stdout)]
        {
            println!("{doc}");
        }
    } else {
        print_table(&locks, &leaders, now);
    }
    Ok(0)
}

pub(crate) fn now_micros() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

fn lock_json(l: &LockState, now: i64) -> Value {
    json!({
        "key": l.key,
        "held": l.holder.is_some(),
        "fencing_token": l.fence.map(|f| f.get()),
        "holder": l.holder.as_deref().map(holder_worker),
        "expires_at": l.expires_at.map(|t| t.to_string()),
        "expires_in_s": l.expires_at.map(|t| seconds_until(t, now)),
        "holder_details": l.details.as_ref().map(|d| crate::listing::details_json(d, now)),
    })
}

fn leader_json(l: &LeaderState, now: i64) -> Value {
    let r = &l.record;
    json!({
        "key": l.key,
        "holder": r.holder,
        "transitions": r.transitions,
        "lease_s": r.lease_duration.as_secs_f64(),
        "acquired_at": r.acquired_at.to_string(),
        "renewed_at": r.renewed_at.to_string(),
        "expires_at": r.expires_at().to_string(),
        "expires_in_s": seconds_until(r.expires_at(), now),
        "metadata": r.metadata.as_map(),
        "holder_details": l.details.as_ref().map(|d| crate::listing::details_json(d, now)),
    })
}

#[allow(clippy::print_stdout)]
fn print_table(locks: &[LockState], leaders: &[LeaderState], now: i64) {
    if locks.is_empty() && leaders.is_empty() {
        println!("nothing held, and no lock taken yet");
        return;
    }
    if !locks.is_empty() {
        println!("{:<32} {:<6} {:>8}  {:<18} {:>10}", "LOCK", "STATE", "FENCE", "HOLDER", "EXPIRES IN");
        for l in locks {
            let fence = l.fence.map_or_else(|| "-".into(), |f| f.get().to_string());
            let (state, holder, expires) = match (&l.holder, l.expires_at) {
                (Some(token), Some(at)) => {
                    ("held", holder_worker(token).to_owned(), format!("{:.1}s", seconds_until(at, now)))
                }
                _ => ("free", "-".to_owned(), "-".to_owned()),
            };
            println!("{:<32} {state:<6} {fence:>8}  {holder:<18} {expires:>10}", l.key);
        }
    }
    if !leaders.is_empty() {
        if !locks.is_empty() {
            println!();
        }
        println!("{:<32} {:<18} {:>11} {:>10}  LEADING SINCE", "ELECTION", "LEADER", "TRANSITIONS", "EXPIRES IN");
        for l in leaders {
            let r = &l.record;
            println!(
                "{:<32} {:<18} {:>11} {:>10}  {}",
                l.key,
                r.holder,
                r.transitions,
                format!("{:.1}s", seconds_until(r.expires_at(), now)),
                r.acquired_at
            );
        }
    }
}
