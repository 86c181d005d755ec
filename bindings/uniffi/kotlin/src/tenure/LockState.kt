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

/**
 * Who holds a lock or task lock now ([Lock.state], [TaskLock.state]); never its ownership token.
 * [holder] is `null` when the lock is free, or when its holder told nothing (a grelmicro process).
 * [fencingToken] is the last one issued for the name (kept after release, except on etcd).
 */
data class LockState(
    val name: String,
    val held: Boolean,
    val fencingToken: Long?,
    val worker: String?,
    val expiresAt: Instant?,
    val holder: HolderInfo?,
)

internal fun tenure.ffi.LockState.kotlin() = LockState(
    name,
    held,
    fencingToken?.toLong(),
    worker,
    expiresAt,
    holder?.let { HolderInfo(it.host, it.pid.toInt(), it.program, it.purpose, it.acquiredAt) },
)
