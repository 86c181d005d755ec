"""Tenure: distributed locks with fencing tokens, task locks and leader election — grelmicro's
coordination API (and its read-write lock) on a Rust core, on memory, SQLite, Redis, PostgreSQL,
etcd, or a backend you write — and a fenced semaphore."""

import atexit

from tenure import _tenure
from tenure._lock import Lock, LockHandle
from tenure._state import HolderInfo, LockState, Waiter
from tenure._config import LeaderElectionConfig, LockConfig, ReadWriteLockConfig, TaskLockConfig
from tenure._coordination import Coordination
from tenure._election import LeaderElection, LeaderHealth
from tenure._record import LeaderRecord
from tenure._rw_lock import ReadGuard, ReadWriteLock, ReadWriteLockState, WriteGrant, WriteGuard
from tenure._semaphore import Semaphore, SemaphoreState
from tenure._task_lock import TaskLock
from tenure._adapters import (
    LeaderElectionAdapter,
    LockAdapter,
    MemoryLeaderElectionAdapter,
    MemoryLockAdapter,
    MemoryReadWriteLockAdapter,
    MemoryScheduleAdapter,
    MemorySemaphoreAdapter,
    ReadWriteLockAdapter,
    ScheduleAdapter,
    SemaphoreAdapter,
)
from tenure._providers import EtcdProvider, MemoryProvider, PostgresProvider, RedisProvider, SQLiteProvider
from tenure._user_backend import (
    LeaderElectionBackend,
    LockBackend,
    ReadWriteLockBackend,
    ScheduleBackend,
    SemaphoreBackend,
)
from tenure.errors import (
    AdmissionError,
    BackendNotOpenError,
    BackendScopeError,
    BackendScopeWarning,
    CoordinationBackendError,
    CoordinationError,
    ConfigTypeError,
    EventLoopDeadlockError,
    LockAcquireError,
    LockBackendError,
    LockBusyError,
    LockExtendError,
    LockLockedCheckError,
    LockLostError,
    LockNotOwnedError,
    LockOwnedCheckError,
    LockReentrantError,
    LockReleaseError,
    LockTimeoutError,
    LockUpgradeError,
    OutOfContextError,
    SettingsValidationError,
    TenureConfigWarning,
    TenureError,
    UnknownEnvironmentWarning,
    WouldBlockError,
)

__version__: str = _tenure.__version__
"""The version of Tenure this package is (the Rust workspace's, which the wheel carries)."""

# At exit, the runtime's threads stop handing results to Python before the interpreter goes.
atexit.register(_tenure.shutdown)

# Metrics and spans through opentelemetry-api when it is installed (docs/telemetry.md).
from tenure import telemetry  # noqa: E402

__all__ = [
    "AdmissionError",
    "BackendNotOpenError",
    "BackendScopeError",
    "BackendScopeWarning",
    "Coordination",
    "CoordinationBackendError",
    "CoordinationError",
    "ConfigTypeError",
    "EventLoopDeadlockError",
    "LeaderElection",
    "LeaderHealth",
    "LeaderElectionAdapter",
    "LeaderElectionBackend",
    "LeaderElectionConfig",
    "LeaderRecord",
    "Lock",
    "LockAcquireError",
    "LockAdapter",
    "LockBackend",
    "LockBackendError",
    "LockBusyError",
    "LockConfig",
    "LockExtendError",
    "LockHandle",
    "LockState",
    "HolderInfo",
    "Waiter",
    "LockLockedCheckError",
    "LockLostError",
    "LockNotOwnedError",
    "LockOwnedCheckError",
    "LockReentrantError",
    "LockReleaseError",
    "LockTimeoutError",
    "LockUpgradeError",
    "MemoryLeaderElectionAdapter",
    "MemoryLockAdapter",
    "MemoryReadWriteLockAdapter",
    "EtcdProvider",
    "MemoryProvider",
    "MemoryScheduleAdapter",
    "MemorySemaphoreAdapter",
    "PostgresProvider",
    "ReadGuard",
    "ReadWriteLock",
    "ReadWriteLockAdapter",
    "ReadWriteLockBackend",
    "ReadWriteLockConfig",
    "ReadWriteLockState",
    "OutOfContextError",
    "RedisProvider",
    "SQLiteProvider",
    "ScheduleAdapter",
    "ScheduleBackend",
    "Semaphore",
    "SemaphoreAdapter",
    "SemaphoreBackend",
    "SemaphoreState",
    "SettingsValidationError",
    "TaskLock",
    "TaskLockConfig",
    "TenureConfigWarning",
    "TenureError",
    "UnknownEnvironmentWarning",
    "WouldBlockError",
    "WriteGrant",
    "WriteGuard",
    "telemetry",
]
