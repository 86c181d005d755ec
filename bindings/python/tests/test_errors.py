"""The error classes keep grelmicro 0.44's hierarchy, so `except` clauses written for it work."""

import pytest

from tenure import errors


def test_the_hierarchy_is_grelmicros():
    assert issubclass(errors.LockTimeoutError, errors.WouldBlockError)
    assert issubclass(errors.LockTimeoutError, TimeoutError)
    assert issubclass(errors.WouldBlockError, RuntimeError)
    assert issubclass(errors.WouldBlockError, errors.AdmissionError)
    assert issubclass(errors.LockNotOwnedError, errors.CoordinationError)
    assert not issubclass(errors.LockNotOwnedError, errors.LockReleaseError)
    assert issubclass(errors.LockReleaseError, errors.LockBackendError)
    assert issubclass(errors.LockExtendError, errors.LockBackendError)
    assert issubclass(errors.LockAcquireError, errors.LockBackendError)
    assert issubclass(errors.LockBackendError, errors.CoordinationError)
    assert issubclass(errors.SettingsValidationError, ValueError)
    assert issubclass(errors.OutOfContextError, RuntimeError)
    assert issubclass(errors.CoordinationError, errors.TenureError)
    assert issubclass(errors.EventLoopDeadlockError, BaseException)
    assert not issubclass(errors.EventLoopDeadlockError, Exception)


def test_messages_and_attributes_follow_grelmicro():
    e = errors.LockTimeoutError(name="cart", timeout=0.5)
    assert (e.name, e.timeout, str(e)) == ("cart", 0.5, "Lock 'cart' not acquired within 0.5s")
    assert str(errors.LockAcquireError(name="x")) == "Failed to acquire lock: name=x."
    assert str(errors.LockReleaseError(name="x", reason="r")) == "Failed to release lock: name=x, reason=r."


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        ("LOCK_TIMEOUT", errors.LockTimeoutError),
        ("LOCK_REENTRANT", errors.LockReentrantError),
        ("LOCK_NOT_OWNED", errors.LockNotOwnedError),
        ("LOCK_ACQUIRE_FAILED", errors.LockAcquireError),
        ("WOULD_BLOCK", errors.WouldBlockError),
        ("SETTINGS_INVALID", errors.SettingsValidationError),
        ("OUT_OF_CONTEXT", errors.OutOfContextError),
        ("EVENT_LOOP_DEADLOCK", errors.EventLoopDeadlockError),
    ],
)
def test_core_codes_become_classes_with_the_cores_message(code, cls):
    e = errors._from_rust(code, "the core's message", "cart", 1.5)
    assert type(e) is cls
    assert str(e) == "the core's message"
