package tenure

import java.time.Instant

/** What a holder told the store when it took the lock. */
data class HolderInfo(
    val host: String,
    val pid: Int,
    val program: String,
    val purpose: String?,
    val acquiredAt: Instant,
)

/** One in a lock's waiting line: its worker, since when it waits (`null` where the store does not keep it), what it told the store. */
data class Waiter(
    val worker: String,
    val since: Instant?,
    val details: HolderInfo?,
)

/**
 * Who holds a lock or task lock now ([Lock.state], [TaskLock.state]); never an ownership token.
 * [holder] is `null` when the lock is free, or when its holder told nothing (a grelmicro process).
 * [fencingToken] is the last one issued for the name (kept after release, except on etcd).
 * [waiting] lists who waits, first in line first; `null` where the store keeps no line (SQLite,
 * etcd, memory, a store of your own).
 */
data class LockState(
    val name: String,
    val held: Boolean,
    val fencingToken: Long?,
    val worker: String?,
    val expiresAt: Instant?,
    val holder: HolderInfo?,
    val waiting: List<Waiter>? = null,
)

private fun tenure.ffi.HolderInfo.kotlin() = HolderInfo(host, pid.toInt(), program, purpose, acquiredAt)

internal fun tenure.ffi.LockState.kotlin() = LockState(
    name,
    held,
    fencingToken?.toLong(),
    worker,
    expiresAt,
    holder?.kotlin(),
    waiting?.map { Waiter(it.worker, it.since, it.details?.kotlin()) },
)
