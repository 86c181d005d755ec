//! `tenure locks [PREFIX]`: every lock, task lock, read-write lock, semaphore and election whose
//! name starts with PREFIX, with its holders (workers and sides, never tokens), fence, lease left
//! and waiters; a table for people, one JSON document with `--json`.

use clap::Args;
use serde_json::{Value, json};

use tenure::HolderInfo;
use tenure::backend::{Waiting, holder_worker};

use crate::Failure;
use crate::listing::{self, Held, Row, Snapshot, seconds_until};
use crate::status::now_micros;
use crate::store;

/// The most names shown unless `--limit` says otherwise.
const DEFAULT_LIMIT: u32 = 1_000;

#[derive(Args, Debug)]
pub(crate) struct LocksArgs {
    /// Show only the names that start with PREFIX (the name after its kind: `cart` shows
    /// lock:cart-1 and semaphore:cart).
    #[arg(default_value = "")]
    pub(crate) prefix: String,
    /// One JSON document on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// Show at most N names (default 1000; elections first, then locks); the rest are counted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) limit: u32,
}

pub(crate) async fn run(backend: Option<&str>, args: LocksArgs) -> Result<i32, Failure> {
    let store = store::open(backend).await?;
    let Some(inspect) = store.inspect() else {
        return Err(Failure::usage("memory: holds nothing outside the process that uses it; give a shared store"));
    };
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let snapshot = listing::read(inspect.as_ref(), &args.prefix, limit).await.map_err(Failure::store)?;
    store::close(&store).await;
    let now = now_micros();
    #[allow(clippy::print_stdout)]
    if args.json {
        println!("{}", document(&snapshot, now));
    } else {
        print!("{}", table(&snapshot, now));
    }
    Ok(0)
}

fn document(s: &Snapshot, now: i64) -> Value {
    let locks: Vec<Value> = Row::all(s)
        .iter()
        .map(|r| {
            json!({
                "kind": r.kind,
                "name": r.name,
                "held": !r.holders.is_empty(),
                "fencing_token": r.fence,
                "holders": r.holders.iter().map(|h| {
                    let mut holder = json!({
                        "worker": h.worker, "side": h.side, "expires_in_s": seconds_until(h.end, now),
                    });
                    if let (Some(d), Some(fields)) = (h.details, holder.as_object_mut()) {
                        fields.extend(listing::details_json(d, now));
                    }
                    holder
                }).collect::<Vec<_>>(),
                "waiters": r.waiters,
                "line": r.line.iter().map(|w| waiter_json(w, now)).collect::<Vec<_>>(),
                "permits": r.permits,
            })
        })
        .collect();
    let elections: Vec<Value> = s
        .leaders
        .iter()
        .map(|l| {
            json!({
                "name": listing::split(&l.key).1,
                "leader": l.record.holder,
                "term": l.record.transitions,
                "fencing_token": l.record.fence.map(|f| f.get()),
                "expires_in_s": seconds_until(l.record.expires_at(), now),
                "leader_details": l.details.as_ref().map(|d| listing::details_json(d, now)),
            })
        })
        .collect();
    json!({ "locks": locks, "elections": elections, "omitted": s.omitted })
}

pub(crate) fn table(s: &Snapshot, now: i64) -> String {
    let rows = Row::all(s);
    let mut out = String::new();
    if rows.is_empty() && s.leaders.is_empty() {
        out.push_str("no lock or election under this prefix\n");
    }
    if !rows.is_empty() {
        out.push_str(&format!(
            "{:<10} {:<28} {:>8} {:>9} {:>8}  HOLDERS\n",
            "KIND", "NAME", "FENCE", "LEFT", "WAITING"
        ));
        for r in &rows {
            let fence = r.fence.map_or_else(|| "-".to_owned(), |f| f.to_string());
            let left = r.first_end().map_or_else(|| "-".to_owned(), |end| format!("{:.1}s", seconds_until(end, now)));
            let waiting = r.waiters.as_ref().map_or_else(|| "-".to_owned(), |w| w.len().to_string());
            let mut holders: Vec<String> =
                r.holders.iter().map(|h| format!("{} ({}){}", h.worker, h.side, told(h, now))).collect();
            if holders.is_empty() {
                holders.push("free".to_owned());
            }
            let mut shown = holders.join(", ");
            if !r.line.is_empty() {
                let line: Vec<String> = r.line.iter().map(|w| waiter_text(w, now)).collect();
                shown.push_str(&format!("; waiting: {}", line.join(", ")));
            }
            let name = match r.permits {
                Some(p) => format!("{} [{}/{p}]", r.name, r.holders.len()),
                None => r.name.to_owned(),
            };
            out.push_str(&format!("{:<10} {name:<28} {fence:>8} {left:>9} {waiting:>8}  {}\n", r.kind, shown));
        }
    }
    if !s.leaders.is_empty() {
        if !rows.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{:<10} {:<28} {:>8} {:>9} {:>8}  LEADER\n", "KIND", "NAME", "FENCE", "LEFT", "TERM"));
        for l in &s.leaders {
            let r = &l.record;
            let fence = r.fence.map_or_else(|| "-".to_owned(), |f| f.get().to_string());
            let left = format!("{:.1}s", seconds_until(r.expires_at(), now));
            let told = l.details.as_ref().map(|d| told_by(d, now)).unwrap_or_default();
            out.push_str(&format!(
                "{:<10} {:<28} {fence:>8} {left:>9} {:>8}  {}{told}\n",
                "election",
                listing::split(&l.key).1,
                r.transitions,
                r.holder
            ));
        }
    }
    if s.omitted > 0 {
        out.push_str(&format!("… and {} more names (--limit, or a longer PREFIX)\n", s.omitted));
    }
    out
}

/// What a holder told the store, for the table: ` on HOST pid PID (PROGRAM) for 12.0s: PURPOSE`.
fn told(h: &Held<'_>, now: i64) -> String {
    h.details.map(|d| told_by(d, now)).unwrap_or_default()
}

/// What a holder or leader told the store: ` on HOST pid PID (PROGRAM) for 12.0s: PURPOSE`.
fn told_by(d: &HolderInfo, now: i64) -> String {
    let held = -seconds_until(d.acquired_at, now);
    let purpose = d.purpose.as_deref().map(|p| format!(": {p}")).unwrap_or_default();
    format!(" on {} pid {} ({}) for {held:.1}s{purpose}", d.host, d.pid, d.program)
}

/// One waiter of a lock's line, for the table: `w2 for 3.1s (node server.mjs on web-2 pid 88)`.
fn waiter_text(w: &Waiting, now: i64) -> String {
    let mut out = holder_worker(&w.token).to_owned();
    if let Some(since) = w.since {
        out.push_str(&format!(" for {:.1}s", -seconds_until(since, now)));
    }
    if let Some(d) = &w.details {
        out.push_str(&format!(" ({} on {} pid {})", d.program, d.host, d.pid));
    }
    out
}

/// One waiter of a lock's line, as JSON: its worker, since when, and what it told the store.
fn waiter_json(w: &Waiting, now: i64) -> Value {
    let mut fields = serde_json::Map::new();
    fields.insert("worker".into(), holder_worker(&w.token).into());
    fields.insert("since".into(), w.since.map(|t| t.to_string()).into());
    fields.insert("waiting_for_s".into(), w.since.map(|t| -seconds_until(t, now)).into());
    if let Some(d) = &w.details {
        fields.extend(
            listing::details_json(d, now).into_iter().filter(|(k, _)| !k.contains("acquired") && k != "held_for_s"),
        );
    }
    Value::Object(fields)
}
