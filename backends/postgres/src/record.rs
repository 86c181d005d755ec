//! Reading rows: TIMESTAMPTZ as microseconds, and leader records checked column by column.

use std::error::Error;
use std::time::Duration;

use tenure_core::{BackendError, LeaderRecord, WallTime};
use tenure_store::record::{fence as fence_value, malformed, metadata_from_json};
use tokio_postgres::Row;
use tokio_postgres::types::{FromSql, Type};

/// Microseconds from 1970 to 2000-01-01, PostgreSQL's epoch.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// A `TIMESTAMPTZ` as an instant; `infinity` and `-infinity` are refused. (A `TIMESTAMP` left in
/// a lock table whose conversion waits for its next start is read as UTC, for `tenure status`.)
pub(crate) struct Instant(pub(crate) WallTime);

impl<'a> FromSql<'a> for Instant {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        let micros = i64::from_be_bytes(raw.try_into()?);
        if micros == i64::MAX || micros == i64::MIN {
            return Err("an infinite timestamp".into());
        }
        let unix = micros.checked_add(PG_EPOCH_MICROS).ok_or("a timestamp out of range")?;
        Ok(Self(WallTime::from_unix_micros(unix)))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ || *ty == Type::TIMESTAMP
    }
}

/// Column `i` of `row`, or a malformed-record error naming `what` of `name`.
pub(crate) fn column<'r, T: FromSql<'r>>(row: &'r Row, i: usize, name: &str, what: &str) -> Result<T, BackendError> {
    row.try_get(i).map_err(|e| malformed(format!("the {what} of {name} cannot be read: {}", crate::describe(&e))))
}

/// A leader record from seven columns starting at `at`: holder, lease (µs), acquired, renewed,
/// transitions, metadata (JSON text), the term's fence (NULL: none).
pub(crate) fn leader(row: &Row, at: usize, name: &str) -> Result<LeaderRecord, BackendError> {
    let holder: String = column(row, at, name, "leader holder")?;
    let lease: i64 = column(row, at + 1, name, "leader lease")?;
    let lease_duration = u64::try_from(lease)
        .map(Duration::from_micros)
        .map_err(|_| malformed(format!("the leader record of {name} has a negative lease")))?;
    let Instant(acquired_at) = column(row, at + 2, name, "leader acquired_at")?;
    let Instant(renewed_at) = column(row, at + 3, name, "leader renewed_at")?;
    let transitions: i32 = column(row, at + 4, name, "leader transitions")?;
    let transitions = u64::try_from(transitions)
        .map_err(|_| malformed(format!("the leader record of {name} has negative transitions")))?;
    let metadata: String = column(row, at + 5, name, "leader metadata")?;
    let metadata = metadata_from_json(name, &metadata)?;
    let fence: Option<i64> = column(row, at + 6, name, "leader fence")?;
    let fence = fence.map(|f| fence_value(name, f)).transpose()?;
    Ok(LeaderRecord { holder, lease_duration, acquired_at, renewed_at, transitions, metadata, fence })
}
