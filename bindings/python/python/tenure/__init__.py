"""Tenure: distributed locks with fencing tokens, task locks and leader election — grelmicro's
coordination API on a Rust core, on memory, SQLite and Redis."""

import atexit

from tenure import _tenure
from tenure._lock import Lock, LockHandle
from tenure._config import LeaderElectionConfig, LockConfig, TaskLockConfig
from tenure._coordination import Coordination
from tenure._election import LeaderElection, LeaderRecord
from tenure._task_lock import TaskLock
from tenure._providers import (
    LeaderElectionAdapter,
    LockAdapter,
    MemoryLeaderElectionAdapter,
    MemoryLockAdapter,
    MemoryProvider,
    PostgresProvider,
    RedisProvider,
    SQLiteProvider,
)
from tenure.errors import (
    CoordinationBackendError,
    CoordinationError,
    LockAcquireError,
    LockLostError,
    LockNotOwnedError,
    LockReentrantError,
    LockReleaseError,
    LockTimeoutError,
    OutOfContextError,
    SettingsValidationError,
    TenureError,
    WouldBlockError,
)

# At exit, the runtime's threads stop handing results to Python before the interpreter goes.
atexit.register(_tenure.shutdown)

__all__ = [
    "Coordination",
    "CoordinationBackendError",
    "CoordinationError",
    "LeaderElection",
    "LeaderElectionAdapter",
    "LeaderElectionConfig",
    "LeaderRecord",
    "Lock",
    "LockAcquireError",
    "LockAdapter",
    "LockConfig",
    "LockHandle",
    "LockLostError",
    "LockNotOwnedError",
    "LockReentrantError",
    "LockReleaseError",
    "LockTimeoutError",
    "MemoryLeaderElectionAdapter",
    "MemoryLockAdapter",
    "MemoryProvider",
    "PostgresProvider",
    "OutOfContextError",
    "RedisProvider",
    "SQLiteProvider",
    "SettingsValidationError",
    "TaskLock",
    "TaskLockConfig",
    "TenureError",
    "WouldBlockError",
]
