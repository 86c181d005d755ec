"""Where leases are kept: providers (`MemoryProvider`, `SQLiteProvider`, `RedisProvider`,
`PostgresProvider`, `EtcdProvider`). A provider other than memory is opened with `async with provider:` (or
`await provider.open()`) and closed the same way; a backend it handed out used while it is not
open raises `OutOfContextError`."""

from __future__ import annotations

import os
from typing import Any, Optional

from tenure import _tenure
from tenure._adapters import LeaderElectionAdapter, LockAdapter, ReadWriteLockAdapter, ScheduleAdapter, SemaphoreAdapter
from tenure._process import generation
from tenure.errors import OutOfContextError, SettingsValidationError


class _Provider:
    """A store reached through one native backend, opened once.

    `async with provider:` opens it and closes it when the outermost block ends (blocks nest);
    `open()` and `close()` do so directly. The factories hand out its backends — grelmicro 0.44's
    names (`lock_backend()`, `leaderelection_backend()`, `schedule_backend()`) and the API
    reference's (`lock()`, `leaderelection()`, `schedule()`) — one of each kind per provider."""

    kind = "provider"
    #: How far the store's exclusion reaches: `process`, `host` or `cluster`.
    scope = "cluster"

    def __init__(self) -> None:
        self._backend: Optional[_tenure.Backend] = None
        self._pid, self._generation = os.getpid(), generation()
        self._entered = 0
        self._opened_by_block = False
        self._adapters: dict[str, Any] = {}

    def _url(self) -> str:
        raise NotImplementedError

    async def open(self) -> None:
        """Connects (idempotent)."""
        if self._backend is None or self._generation != generation():
            self._backend = await _tenure.open_backend(self._url())
            self._pid, self._generation = os.getpid(), generation()

    async def close(self) -> None:
        """Disconnects; adapters fail until it is opened again."""
        backend, self._backend = self._backend, None
        self._entered = 0
        if backend is not None:
            await backend.close()

    async def __aenter__(self) -> Any:
        if self._entered == 0:
            # The outermost block closes only what it opened: a provider opened with `open()`
            # stays open after a block (a `Coordination`'s) that borrowed it.
            self._opened_by_block = self._backend is None or self._generation != generation()
        await self.open()
        self._entered += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Closes when the outermost `async with` that opened it ends; an exit without an
        enter does nothing."""
        if self._entered == 0:
            return
        self._entered -= 1
        if self._entered == 0 and self._opened_by_block:
            await self.close()

    def _native(self, method: str) -> _tenure.Backend:
        if self._backend is not None and self._generation != generation():
            raise OutOfContextError(
                f"{type(self).__name__}.{method} was called in process {os.getpid()}, but the "
                f"{type(self).__name__} was opened in process {self._pid}, before a fork. A forked child never "
                "renews or releases its parent's leases: open the provider again in this process."
            )
        if self._backend is None:
            name = type(self).__name__
            raise OutOfContextError(
                f"Could not call {name}.{method}: the {name} is not open. It was never opened, or it already "
                f"closed. Open it with `async with {name}(...):` and make the call while it is open."
            )
        return self._backend

    def _adapter(self, cls: type) -> Any:
        adapter = self._adapters.get(cls.__name__)
        if adapter is None:
            adapter = self._adapters[cls.__name__] = cls(self)
        return adapter

    def lock_backend(self) -> LockAdapter:
        """The lock backend of this store (locks and task locks)."""
        return self._adapter(LockAdapter)  # type: ignore[no-any-return]

    def leaderelection_backend(self) -> LeaderElectionAdapter:
        """The leader-election backend of this store."""
        return self._adapter(LeaderElectionAdapter)  # type: ignore[no-any-return]

    def schedule_backend(self) -> ScheduleAdapter:
        """The cron schedule backend of this store."""
        return self._adapter(ScheduleAdapter)  # type: ignore[no-any-return]

    def readwritelock_backend(self) -> ReadWriteLockAdapter:
        """The read-write lock backend of this store (grelmicro 0.44's name)."""
        return self._adapter(ReadWriteLockAdapter)  # type: ignore[no-any-return]

    def semaphore_backend(self) -> SemaphoreAdapter:
        """The semaphore backend of this store (a Tenure primitive)."""
        return self._adapter(SemaphoreAdapter)  # type: ignore[no-any-return]

    lock = lock_backend
    leaderelection = leaderelection_backend
    schedule = schedule_backend
    readwritelock = readwritelock_backend
    semaphore = semaphore_backend


class MemoryProvider(_Provider):
    """Leases in this process's memory: for tests, and for one process."""

    kind = "memory"
    scope = "process"

    def __init__(self) -> None:
        super().__init__()
        self._backend = _tenure.memory_backend()

    async def open(self) -> None:
        if self._backend is None:
            self._backend = _tenure.memory_backend()

    def _native(self, method: str) -> _tenure.Backend:
        if self._generation != generation():
            # Memory is per process: a forked child starts with an empty store of its own.
            self._backend = _tenure.memory_backend()
            self._pid, self._generation = os.getpid(), generation()
        return super()._native(method)

    async def close(self) -> None:
        """Nothing to close: the leases live as long as the provider."""
        self._entered = 0


class SQLiteProvider(_Provider):
    """Leases in one SQLite file, shared by every process on the host (grelmicro 0.44's tables).

    `path` or the environment variable `{env_prefix}PATH` (default `SQLITE_PATH`) names the file.

    The package carries its own SQLite: do not open the same file through another SQLite user in
    this process (grelmicro's SQLite adapter, `sqlite3`) — two copies of SQLite in one process do
    not see each other's locks. Other processes are fine.
    """

    kind = "sqlite"
    scope = "host"

    def __init__(self, path: Optional[str] = None, *, env_prefix: str = "SQLITE_") -> None:
        super().__init__()
        self.url = _tenure.store_url("sqlite", env_prefix, path=None if path is None else os.fspath(path))
        #: The file (`:memory:` for a private in-memory database).
        self.path = _tenure.sqlite_file(self.url) or ":memory:"

    def _url(self) -> str:
        return self.url

    async def open(self) -> None:
        """Opens the file, refusing one that another SQLite library of this process has open."""
        if self._backend is None or self._generation != generation():
            _refuse_foreign_sqlite(self.path)
        opening = self._backend is None or self._generation != generation()
        await super().open()
        if opening and self.path != ":memory:":
            target = os.path.realpath(self.path)
            _OPENED_HERE[target] = _OPENED_HERE.get(target, 0) + 1

    async def close(self) -> None:
        """Closes the file (expired leases are vacated first)."""
        closing = self._backend is not None
        await super().close()
        if closing and self.path != ":memory:":
            target = os.path.realpath(self.path)
            left = _OPENED_HERE.get(target, 0) - 1
            if left > 0:
                _OPENED_HERE[target] = left
            else:
                _OPENED_HERE.pop(target, None)


#: Files this package's SQLite has open in this process, and how many times (its own
#: descriptors on them are fine).
_OPENED_HERE: dict[str, int] = {}


def _refuse_foreign_sqlite(path: str) -> None:
    """Refuses a file that this process already has open through another copy of SQLite (Linux):
    two copies of SQLite in one process do not see each other's locks, so both could "hold" a
    lease. Other processes are fine."""
    if path == ":memory:" or not os.path.isdir("/proc/self/fd"):
        return
    target = os.path.realpath(path)
    if target in _OPENED_HERE:
        return
    names = {target, target + "-wal", target + "-shm", target + "-journal"}
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return
    for fd in descriptors:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") in names:
                raise SettingsValidationError(
                    f"{path} is already open in this process through another SQLite library (grelmicro's "
                    "SQLite adapter, Python's sqlite3, ...). Two copies of SQLite in one process do not see each "
                    "other's locks, so leases could be held twice. Use a separate file for tenure, or a separate "
                    "process."
                )
        except OSError:
            continue


class RedisProvider(_Provider):
    """Leases on a Redis (6+) or Valkey server (grelmicro 0.44's keys).

    `url` (`redis://`, `rediss://`, `redis+cluster://`, or a master behind Sentinel:
    `redis+sentinel://[:password@]h1:26379,h2:26379/<master>[/<db>]`), or `host`/`port`/`db`/
    `password`, or the environment variables `{env_prefix}URL` xor `{env_prefix}HOST` (+ `PORT`,
    `DB`, `PASSWORD`, `SENTINEL_PASSWORD`). `sentinel_password` is the sentinels' own password.
    """

    kind = "redis"

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        host: Optional[str] = None,
        port: Optional[int] = None,
        db: Optional[int] = None,
        password: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        env_prefix: str = "REDIS_",
    ) -> None:
        super().__init__()
        self.url = _tenure.store_url(
            "redis", env_prefix, url=url, host=host, port=port, db=db, password=password, sentinel_password=sentinel_password
        )

    def _url(self) -> str:
        return self.url


class EtcdProvider(_Provider):
    """Leases on an etcd cluster, in the key layout of etcd's own `concurrency` package (so
    `etcdctl lock` and `etcdctl elect` exclude and follow Tenure processes on the same names);
    fencing tokens are the holders' create revisions.

    `url` (`etcd://[user:password@]host:2379[,host:2379…]`, with `prefix=`, `connect_timeout=`,
    `command_timeout=`), or `host`/`port`/`user`/`password`, or the environment variables
    `{env_prefix}URL` xor `{env_prefix}HOST` (+ `PORT`, `USER`, `PASSWORD`). grelmicro has no etcd
    store: these names are Tenure's own.
    """

    kind = "etcd"

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        host: Optional[str] = None,
        port: Optional[int] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        env_prefix: str = "ETCD_",
    ) -> None:
        super().__init__()
        self.url = _tenure.store_url("etcd", env_prefix, url=url, host=host, port=port, user=user, password=password)

    def _url(self) -> str:
        return self.url


class PostgresProvider(_Provider):
    """Leases in a PostgreSQL database (grelmicro 0.44's tables, shared with grelmicro services).

    `url` (`postgresql://user:password@host:5432/db`, `postgres://`; libpq's `sslmode` and
    `sslrootcert`; Tenure's `lock_table`, `leader_table`, `schedule_table`, `statement_timeout`
    and `notify=false` behind a pooler in transaction mode), or `host`/`port`/`database`/`user`/
    `password`, or the environment variables `{env_prefix}URL` xor `{env_prefix}HOST` (+ `PORT`,
    `DB` or `DATABASE`, `USER`, `PASSWORD`), as grelmicro's `PostgresProvider` reads them.
    `command_timeout` (seconds; else `{env_prefix}COMMAND_TIMEOUT`, else 5) bounds each statement.
    """

    kind = "postgres"

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        host: Optional[str] = None,
        port: Optional[int] = None,
        database: Optional[str] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        command_timeout: Optional[float] = None,
        env_prefix: str = "POSTGRES_",
    ) -> None:
        super().__init__()
        self.url = _tenure.store_url(
            "postgres",
            env_prefix,
            url=url,
            host=host,
            port=port,
            database=database,
            user=user,
            password=password,
            command_timeout=command_timeout,
        )

    def _url(self) -> str:
        return self.url
