package tenure

import kotlin.coroutines.AbstractCoroutineContextElement
import kotlin.coroutines.CoroutineContext
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.withContext
import tenure.ffi.ReadWriteHolders
import tenure.ffi.ReadWriteLock as Ffi

/** A read-write lock's state: the last write's fencing token, whether a writer writes, how many read, how many writers wait. */
data class ReadWriteLockState(val generation: Long, val writing: Boolean, val readers: Int, val waitingWriters: Int)

private fun tenure.ffi.ReadWriteLockState.kotlin() =
    ReadWriteLockState(generation, writing, readers.toInt(), waitingWriters.toInt())

/**
 * A read-write lock (grelmicro 0.44's `ReadWriteLock`): many readers at once, or one writer
 * with a fencing token. A writer waiting holds new readers back; a writer whose predecessor let
 * its lease lapse is told so ([LockGuard.poisoned]). Each acquire is its own holder, but the
 * work of a side's [Acquirable.withLock] is one: a `suspend` acquire there of the write side
 * while reading throws [LockUpgradeException] (it would wait for itself), one asking again for a
 * side [LockReentrantException] (a blocking acquire is a caller of its own).
 *
 * ```
 * val doc = ReadWriteLock("doc", store)
 * doc.read.withLock { generation -> render(generation) }
 * doc.write.withLock(timeout = 5.seconds) { token -> save(token) }
 * ```
 */
class ReadWriteLock private constructor(private val raw: Ffi) :
    Configurable by configurable(raw::name, raw::settings, raw::reconfigure) {
    /** The read-write lock [name] on [store]. */
    @JvmOverloads
    constructor(name: String, store: Store, options: LockOptions = LockOptions()) : this(call { Ffi(name, store.raw, options.raw()) })

    /** The read-write lock [name] on the store of the enclosing [Coordination.run]. */
    @JvmOverloads
    constructor(name: String, options: LockOptions = LockOptions()) :
        this(name, Coordination.ambient(Coordination.READ_WRITE), options)

    /** The read side: many holders at once, each guard's [LockGuard.fencingToken] the generation read. */
    @JvmField
    val read = Side(write = false)

    /** The write side: one holder, whose [LockGuard.fencingToken] fences its writes. */
    @JvmField
    val write = Side(write = true)

    /** What holds the lock now. */
    suspend fun state(): ReadWriteLockState = call { raw.state() }.kotlin()

    /** [state], blocking the calling thread. */
    fun stateBlocking(): ReadWriteLockState = call { raw.stateBlocking() }.kotlin()

    /** One side of the lock: its acquires, as a [Lock]'s, through the caller of now. */
    inner class Side internal constructor(private val write: Boolean) : Acquirable() {
        /** The pair of holders of the enclosing `withLock`'s work, else a new caller's. */
        private suspend fun caller() = currentCoroutineContext()[Callers]?.pairs?.get(raw) ?: raw.holders()

        override suspend fun take(timeout: Double?) =
            caller().let { if (timeout == null) it.acquire(write) else it.acquireTimeout(write, timeout) }

        override fun takeBlocking(timeout: Double?) =
            raw.holders().let { if (timeout == null) it.acquireBlocking(write) else it.acquireTimeoutBlocking(write, timeout) }

        override suspend fun attempt() = caller().tryAcquire(write)

        override fun attemptBlocking() = raw.holders().tryAcquireBlocking(write)

        override suspend fun <T> scoped(block: suspend () -> T): T {
            val held = currentCoroutineContext()[Callers]?.pairs.orEmpty()
            return if (raw in held) block() else withContext(Callers(held + (raw to raw.holders()))) { block() }
        }

        override fun toString() = "ReadWriteLock($name).${if (write) "write" else "read"}"
    }

    override fun toString() = "ReadWriteLock($name)"
}

/** The read-write locks the work of a side's `withLock` holds, each with its caller (a pair of holders). */
private class Callers(val pairs: Map<Ffi, ReadWriteHolders>) : AbstractCoroutineContextElement(Callers) {
    companion object Key : CoroutineContext.Key<Callers>
}
