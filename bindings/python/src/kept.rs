//! A lease the driver keeps alive, for `Lock.hold()`: the driver's lease slot holding a
//! `KeepAlive`; the body is cancelled when `lost()` completes.

use pyo3::prelude::*;
use tenure::binding::LeaseSlot;
use tenure::{KeepAlive, LockGuard};
use tenure_tokio::Tokio;

use crate::bridge::{Fail, awaitable};

/// A held lease renewed in the background until released, lost or at its maximum hold.
#[pyclass(frozen, module = "tenure._tenure")]
pub(crate) struct Kept {
    slot: LeaseSlot<Tokio>,
}

impl Kept {
    pub(crate) fn new(kept: KeepAlive<LockGuard<Tokio>>) -> Self {
        Self { slot: LeaseSlot::kept(kept) }
    }
}

#[pymethods]
impl Kept {
    /// An awaitable completing when the lease is lost or ended (at once if it was released).
    fn lost<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let lost = self.slot.lost().map_err(Fail::from);
        awaitable(py, async move {
            lost?.await;
            Ok(())
        })
    }

    /// An awaitable completing at the next warning `LockHold`'s loop was not told of (renewals
    /// keep failing and the validity is running out) with the seconds of validity left, or with
    /// `None` once the lease is released or lost.
    fn next_warning<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let warning = self.slot.next_warning();
        awaitable(py, async move { Ok(warning.await.map(|left| left.as_secs_f64())) })
    }

    /// Why the renewals stopped on their own: `"max_hold"`, `"expired"`, `"unreachable"`,
    /// `"lost"`, `"fence_regression"`, `"revoked"`, or `None`.
    #[getter]
    fn ended(&self) -> Option<&'static str> {
        self.slot.ended().map(|end| end.as_str())
    }

    /// The core's `LockLostError` for this lease, by why it ended (when no end was said yet, how
    /// its validity ran out: `unreachable` while renewals failed or went unanswered, else
    /// `expired`).
    fn lost_error(&self, py: Python<'_>) -> PyErr {
        crate::py_error(py, &self.slot.lost_error())
    }

    /// Stops the renewals and releases (once): `LockNotOwnedError` if the lease was lost.
    fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let released = self.slot.release();
        awaitable(py, async move { released.await.map_err(Fail::from) })
    }
}
