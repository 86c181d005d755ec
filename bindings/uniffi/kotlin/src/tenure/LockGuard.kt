package tenure

import java.util.concurrent.atomic.AtomicBoolean
import kotlin.time.Duration
import kotlin.time.toKotlinDuration

import tenure.ffi.LockGuard as Ffi

/** Why a keep-alive stopped renewing on its own: `MAX_HOLD`, `EXPIRED` (renewals did not get through in time) or `LOST` (another holder has it). */
typealias KeepAliveStop = tenure.ffi.KeepAliveStop

/**
 * One acquisition of a lock, with its fencing token. [close] (Java's try-with-resources,
 * Kotlin's `use`) releases it if it was not released yet, and throws [LockNotOwnedException] if
 * its lease was lost meanwhile. Collected by the garbage collector while held, it releases in the
 * background.
 */
class LockGuard internal constructor(private val raw: Ffi) : AutoCloseable {
    private val released = AtomicBoolean(false)

    /** The lock name. */
    val name: String get() = raw.name()

    /** The fencing token of this acquisition: send it with every write the lock protects. */
    val fencingToken: Long get() = raw.fencingToken()

    /** Whether the lease may be counted on now (its validity counts from the request's send). */
    val isValid: Boolean get() = raw.isValid()

    /** Whether a keep-alive renews the lease (kept, not ended, still valid). */
    val keeping: Boolean get() = raw.keeping()

    /** Why the keep-alive stopped on its own (`MAX_HOLD`, `EXPIRED`, `LOST`), once it has. */
    val keepAliveStop: KeepAliveStop? get() = raw.keepAliveStop()

    /** Renews the lease for another lease duration; the fencing token (unchanged while held). */
    suspend fun extend(): Long = call { raw.extend() }

    /** [extend], blocking the calling thread. */
    fun extendBlocking(): Long = call { raw.extendBlocking() }

    /** Whether this acquisition still holds a live lease in the store. */
    suspend fun owned(): Boolean = call { raw.owned() }

    /** [owned], blocking the calling thread. */
    fun ownedBlocking(): Boolean = call { raw.ownedBlocking() }

    /** Releases: a [LockNotOwnedException] if it was released already or its lease was lost. */
    suspend fun release() {
        released.set(true)
        call { raw.release() }
    }

    /** [release], blocking the calling thread. */
    fun releaseBlocking() {
        released.set(true)
        call { raw.releaseBlocking() }
    }

    /**
     * Keeps the lease alive in the background (a renewal every third of it) for at most
     * [maxHold] (no bound without one), then releases it. [lost] completes if renewals stop
     * getting through before the lease runs out.
     */
    @JvmOverloads
    fun keepAlive(maxHold: Duration? = null) = call { raw.keepAlive(maxHold.seconds()) }

    /** [keepAlive] with a `java.time.Duration`. */
    fun keepAlive(maxHold: java.time.Duration) = keepAlive(maxHold.toKotlinDuration())

    /** Completes with `true` the moment the lease is lost (or a keep-alive reached its maximum hold), with `false` once it is released. */
    suspend fun lost(): Boolean = raw.lost()

    /** Releases unless released already (see the class). */
    override fun close() {
        if (released.compareAndSet(false, true)) call { raw.releaseBlocking() }
    }

    override fun toString() = "LockGuard($name, fencingToken=$fencingToken)"
}
