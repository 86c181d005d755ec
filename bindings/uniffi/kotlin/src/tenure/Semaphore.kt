package tenure

import kotlin.time.Duration
import tenure.ffi.Semaphore as Ffi

/** A semaphore's state: the stored permit count (0 while nobody holds or waits), the holders, the waiters in line, the last fencing token issued. */
data class SemaphoreState(val permits: Int, val holders: Int, val waiting: Int, val fence: Long)

private fun tenure.ffi.SemaphoreState.kotlin() = SemaphoreState(permits.toInt(), holders.toInt(), waiting.toInt(), fence)

/**
 * A fenced semaphore: at most [permits] holders of the name at once, across processes, each
 * with its own fencing token; waiters are served in the order they came.
 *
 * ```
 * val exports = Semaphore("exports", 3, store)
 * exports.withPermit(timeout = 30.seconds) { token -> export(token) }
 * ```
 */
class Semaphore private constructor(private val raw: Ffi) :
    Acquirable(),
    Configurable by configurable(raw::name, raw::settings, raw::reconfigure) {
    /** The semaphore [name] of [permits] permits on [store]. */
    @JvmOverloads
    constructor(name: String, permits: Int, store: Store, options: LockOptions = LockOptions()) : this(
        // The core checks the count (0 is refused, naming `permits`); a negative Int has no u32.
        call { Ffi(name, if (permits < 0) 0u else permits.toUInt(), store.raw, options.raw()) },
    )

    /** The semaphore [name] of [permits] permits on the store of the enclosing [Coordination.run]. */
    @JvmOverloads
    constructor(name: String, permits: Int, options: LockOptions = LockOptions()) :
        this(name, permits, Coordination.ambient(Coordination.SEMAPHORE), options)

    /** How many holders it admits at once. */
    val permits: Int get() = raw.permits().toInt()

    override suspend fun take(timeout: Double?) = if (timeout == null) raw.acquire() else raw.acquireTimeout(timeout)

    override fun takeBlocking(timeout: Double?) = if (timeout == null) raw.acquireBlocking() else raw.acquireTimeoutBlocking(timeout)

    override suspend fun attempt() = raw.tryAcquire()

    override fun attemptBlocking() = raw.tryAcquireBlocking()

    /** Whether every permit is taken. */
    suspend fun locked(): Boolean = call { raw.locked() }

    /** [locked], blocking the calling thread. */
    fun lockedBlocking(): Boolean = call { raw.lockedBlocking() }

    /** The stored count, the holders, the waiters and the last fencing token. */
    suspend fun state(): SemaphoreState = call { raw.state() }.kotlin()

    /** [state], blocking the calling thread. */
    fun stateBlocking(): SemaphoreState = call { raw.stateBlocking() }.kotlin()

    /** [withLock] in a semaphore's words: runs [block] holding a permit. */
    suspend fun <T> withPermit(
        timeout: Duration? = null,
        maxHold: Duration? = null,
        warnBelow: Duration? = null,
        onWarning: (suspend (left: Duration) -> Unit)? = null,
        block: suspend (fencingToken: Long) -> T,
    ): T = withLock(timeout, maxHold, warnBelow, onWarning, block)

    override fun toString() = "Semaphore($name, permits=$permits)"
}
