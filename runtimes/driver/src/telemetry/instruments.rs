//! The instruments the driver records, each once, with its unit and bucket boundaries: a sink
//! creates its host's instrument from these and nothing else.
//!
//! Their names follow OpenTelemetry's conventions (dotted, unit-free; the unit is said apart); a
//! Prometheus exporter turns `tenure.lock.acquire.duration` in seconds into
//! `tenure_lock_acquire_duration_seconds`.

/// How an instrument aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InstrumentKind {
    /// A monotonic sum: each measurement is added.
    Counter,
    /// A sum that goes up and down: each measurement (+1 or -1) is added.
    UpDownCounter,
    /// A distribution: each measurement is one sample.
    Histogram,
    /// The last value: each measurement replaces the one before.
    Gauge,
    /// A sum that goes up and down, read when the sink collects: its callback reports
    /// [`super::observe`]'s values (never recorded).
    ObservableUpDownCounter,
    /// A value read when the sink collects, as [`InstrumentKind::ObservableUpDownCounter`].
    ObservableGauge,
}

impl InstrumentKind {
    /// The kind as the bindings name it: `counter`, `up_down_counter`, `histogram`, `gauge`,
    /// `observable_up_down_counter`, `observable_gauge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::UpDownCounter => "up_down_counter",
            Self::Histogram => "histogram",
            Self::Gauge => "gauge",
            Self::ObservableUpDownCounter => "observable_up_down_counter",
            Self::ObservableGauge => "observable_gauge",
        }
    }
}

/// One instrument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Instrument {
    /// Its name.
    pub name: &'static str,
    /// How it aggregates.
    pub kind: InstrumentKind,
    /// Its unit, in UCUM (`s`, `{holder}`).
    pub unit: &'static str,
    /// What it measures.
    pub description: &'static str,
    /// The histogram's bucket boundaries, in its unit (empty for other kinds).
    pub boundaries: &'static [f64],
}

/// From a millisecond to a minute: acquisitions, waits and holds.
const SECONDS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// From 50 µs to 5 s: one store call.
const CALL_SECONDS: &[f64] =
    &[0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0, 5.0];

/// How long an acquire took, by `outcome`: `acquired`, `timed_out`, `would_block`, `error` or
/// `cancelled` (the caller stopped waiting).
pub const ACQUIRE_DURATION: Instrument = Instrument {
    name: "tenure.lock.acquire.duration",
    kind: InstrumentKind::Histogram,
    unit: "s",
    description: "Time from an acquire's call to its outcome",
    boundaries: SECONDS,
};

/// How long an acquire waited for other holders: from its first refusal to its outcome (an
/// acquire granted at once is not recorded).
pub const WAIT_DURATION: Instrument = Instrument {
    name: "tenure.lock.wait.duration",
    kind: InstrumentKind::Histogram,
    unit: "s",
    description: "Time an acquire waited for other holders, from its first refusal",
    boundaries: SECONDS,
};

/// How long a lease was held, from its grant to its end, by `cause`: `released`, or why it was
/// lost (as [`LOSSES`]).
pub const HOLD_DURATION: Instrument = Instrument {
    name: "tenure.lock.hold.duration",
    kind: InstrumentKind::Histogram,
    unit: "s",
    description: "Time a lease was held, from its grant to its release or loss",
    boundaries: SECONDS,
};

/// Leases held by this process now.
pub const HOLDERS: Instrument = Instrument {
    name: "tenure.lock.holders",
    kind: InstrumentKind::ObservableUpDownCounter,
    unit: "{holder}",
    description: "Leases this process holds now",
    boundaries: &[],
};

/// Acquires of this process waiting for other holders now.
pub const WAITERS: Instrument = Instrument {
    name: "tenure.lock.waiters",
    kind: InstrumentKind::ObservableUpDownCounter,
    unit: "{waiter}",
    description: "Acquires of this process waiting for other holders now",
    boundaries: &[],
};

/// Renewals (extends) by `outcome`: `ok`, `regranted` (the lease had lapsed and was granted
/// again with a greater fence), `taken` (another holder has it), `fence_regression` or `error`.
pub const RENEWALS: Instrument = Instrument {
    name: "tenure.lock.renewals",
    kind: InstrumentKind::Counter,
    unit: "{renewal}",
    description: "Lease renewals, by outcome",
    boundaries: &[],
};

/// Leases lost, by `cause`: `expired` (its validity ran out unrenewed), `unreachable` (it ran out
/// while renewals failed: the store was unreachable or slow), `taken` (a renewal found another
/// holder), `fence_regression` (the store answered a lower fence: a failover lost its grants).
pub const LOSSES: Instrument = Instrument {
    name: "tenure.lock.losses",
    kind: InstrumentKind::Counter,
    unit: "{loss}",
    description: "Leases lost before their release, by cause",
    boundaries: &[],
};

/// Kept leases whose renewals failed until the validity left fell below a third of the lease.
pub const VALIDITY_WARNINGS: Instrument = Instrument {
    name: "tenure.lock.validity.warnings",
    kind: InstrumentKind::Counter,
    unit: "{warning}",
    description: "Kept leases whose validity fell below a third of the lease while renewals failed",
    boundaries: &[],
};

/// The last fencing token granted to this process, per name.
pub const FENCE: Instrument = Instrument {
    name: "tenure.lock.fence",
    kind: InstrumentKind::ObservableGauge,
    unit: "{token}",
    description: "The last fencing token granted to this process",
    boundaries: &[],
};

/// 1 while this process leads the election `name`, else 0: summed over a fleet, 1 per election.
pub const LEADER: Instrument = Instrument {
    name: "tenure.election.leader",
    kind: InstrumentKind::ObservableGauge,
    unit: "{leader}",
    description: "1 while this process leads the election, else 0",
    boundaries: &[],
};

/// Leadership changes of this process, by `outcome`: `elected`, or why it ended: `stopped`, `taken`
/// (the store names another leader) or `expired` (no renewal within the renew deadline).
pub const LEADER_CHANGES: Instrument = Instrument {
    name: "tenure.election.changes",
    kind: InstrumentKind::Counter,
    unit: "{change}",
    description: "Times this process gained or lost leadership, by outcome (elected, stopped, taken, expired)",
    boundaries: &[],
};

/// Store calls, by `operation` (`lock_acquire`, `leader_acquire_or_renew`…) and `outcome`
/// (`ok`, or the error's kind), with their latency.
pub const STORE_CALL_DURATION: Instrument = Instrument {
    name: "tenure.store.call.duration",
    kind: InstrumentKind::Histogram,
    unit: "s",
    description: "Store calls, by operation and outcome, with their latency",
    boundaries: CALL_SECONDS,
};

/// Every instrument, for a sink that creates them up front.
pub const INSTRUMENTS: &[&Instrument] = &[
    &ACQUIRE_DURATION,
    &WAIT_DURATION,
    &HOLD_DURATION,
    &HOLDERS,
    &WAITERS,
    &RENEWALS,
    &LOSSES,
    &VALIDITY_WARNINGS,
    &FENCE,
    &LEADER,
    &LEADER_CHANGES,
    &STORE_CALL_DURATION,
];
