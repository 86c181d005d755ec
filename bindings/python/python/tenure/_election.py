"""`LeaderElection`: one leader among the workers sharing a name, renewed in the background.

Run it as a task — `asyncio.create_task(election())` — and cancel the task (or pass `stop=`
an `asyncio.Event`) to stop: leadership ends at once and the lease is released, so a follower
takes over without waiting for it to expire."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Mapping, NamedTuple, Optional, TypeVar, Union
from uuid import UUID

from tenure import _tenure
from tenure._durations import Seconds, positive
from tenure._config import LeaderElectionConfig
from tenure._record import LeaderRecord, record
from tenure._primitive import Primitive
from tenure._user_backend import LeaderElectionBackend
from tenure.errors import WouldBlockError

T = TypeVar("T")


class LeaderHealth(NamedTuple):
    """What a health route answers for an election (:meth:`LeaderElection.health`)."""

    healthy: bool
    reason: str

class _LeaderGuard:
    """`async with election.guard():` enters only while this worker leads."""

    def __init__(self, election: LeaderElection) -> None:
        self._election = election

    async def __aenter__(self) -> _LeaderGuard:
        if not self._election.is_leader():
            error = WouldBlockError(f"Not leader: {self._election.name}")
            error.name = self._election.name
            raise error
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None


class LeaderElection(Primitive):
    """A leader election (grelmicro's `LeaderElection`)."""

    _native_class = _tenure.LeaderElection
    _slot = "leaderelection"
    _config_class = LeaderElectionConfig
    _backend_hint = (
        "a MemoryLeaderElectionAdapter() for one process, or provider.leaderelection() of an open provider"
    )

    def __init__(
        self,
        name: str,
        *,
        backend: Union[LeaderElectionBackend, str, None] = None,
        worker: Union[str, UUID, None] = None,
        lease_duration: Optional[Seconds] = None,
        renew_deadline: Optional[Seconds] = None,
        retry_interval: Optional[Seconds] = None,
        retry_jitter: Optional[float] = None,
        backend_timeout: Optional[Seconds] = None,
        error_interval: Optional[Seconds] = None,
        env_prefix: Optional[str] = None,
        env_load: Optional[bool] = None,
        metadata: Optional[Mapping[str, str]] = None,
        purpose: Optional[str] = None,
    ) -> None:
        super().__init__(
            name,
            backend,
            worker,
            env_prefix,
            env_load,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_interval=retry_interval,
            retry_jitter=retry_jitter,
            backend_timeout=backend_timeout,
            error_interval=error_interval,
            metadata=None if metadata is None else dict(metadata),
            purpose=purpose,
        )

    def _election(self) -> Any:
        return self._built()

    async def __call__(self, *, ready: Optional[asyncio.Event] = None, stop: Optional[asyncio.Event] = None) -> None:
        """Runs the election until `stop` is set or the task is cancelled; then releases."""
        election = self._election()
        running = asyncio.ensure_future(election.run())
        if ready is not None:
            ready.set()
        try:
            if stop is None:
                await running
            else:
                stopping = asyncio.ensure_future(stop.wait())
                await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
                stopping.cancel()
        finally:
            await election.stop()
            running.cancel()

    def is_running(self) -> bool:
        """Whether the loop runs."""
        native = self._own_native()
        return native is not None and native.is_running()

    def is_leader(self) -> bool:
        """Whether this worker leads now (advisory: fence your writes)."""
        native = self._own_native()
        return native is not None and native.is_leader()

    def last_confirmation_age(self) -> Optional[float]:
        """Seconds since the store last confirmed this worker's leadership; `None` if not leading."""
        native = self._own_native()
        return None if native is None else native.last_confirmation_age()

    def is_leader_confirmed_within(self, max_age: float) -> bool:
        """Whether this worker leads and the store confirmed it at most `max_age` seconds ago."""
        native = self._own_native()
        return native is not None and native.is_leader_confirmed_within(float(max_age))

    def health(self, tolerance: Seconds = 10.0) -> LeaderHealth:
        """The leader health check (client-go's): unhealthy when this worker believes it leads but
        the store has not confirmed it within its renew deadline plus `tolerance` (its election
        loop is stuck); healthy otherwise, followers included. Answer 503 from a health route
        when `not health.healthy`."""
        given = positive("tolerance", tolerance)
        native = self._own_native()
        reason = None if native is None else native.health(given)
        return LeaderHealth(reason is None, reason or "healthy")

    async def wait_for_leader(self) -> None:
        """Waits until this worker leads (the loop must be running)."""
        await self._election().wait_for_leader()

    async def wait_lose_leader(self) -> None:
        """Waits until this worker does not lead."""
        await self._election().wait_lose_leader()

    @property
    def fencing_token(self) -> Optional[int]:
        """While this worker leads: its term's fencing token, higher for every term and never
        reset (send it with every write the leader makes, so that a resource refuses a deposed
        leader's); `None` when not leading, or on a store that keeps none."""
        native = self._own_native()
        return None if native is None else native.fencing_token()

    @property
    def record(self) -> Optional[LeaderRecord]:
        """The last record the store returned, if any."""
        native = self._own_native()
        raw = None if native is None else native.record()
        return None if raw is None else record(raw)

    def guard(self) -> _LeaderGuard:
        """A guard that enters only while this worker leads (`WouldBlockError` otherwise)."""
        return _LeaderGuard(self)

    async def __aenter__(self) -> LeaderElection:
        await self.wait_for_leader()
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def lead(self, func: Callable[..., Awaitable[T]], *args: Any, repeat: bool = False) -> Optional[T]:
        """Runs `func(*args)` while this worker leads: waits for leadership, and cancels the work
        when leadership is lost (then returns `None`, or with `repeat` waits to lead again). With
        `repeat`, runs it again after each completion, until it raises."""
        while True:
            await self.wait_for_leader()
            work = asyncio.ensure_future(func(*args))
            lost = asyncio.ensure_future(self.wait_lose_leader())
            try:
                await asyncio.wait({work, lost}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                lost.cancel()
            if work.done():
                result = work.result()
                if not repeat:
                    return result
                continue
            work.cancel()
            try:
                await work
            except asyncio.CancelledError:
                pass
            if not repeat:
                return None
