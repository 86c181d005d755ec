package tenure

import java.util.concurrent.atomic.AtomicBoolean
import java.util.logging.Level
import kotlin.coroutines.cancellation.CancellationException
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.launch
import kotlinx.coroutines.selects.select
import kotlin.time.toKotlinDuration

import tenure.ffi.LockGuard as Ffi

/**
 * Why a keep-alive stopped renewing on its own: `MAX_HOLD`, `EXPIRED` (it ran out before a
 * renewal was tried), `UNREACHABLE` (renewals failed until it ran out), `LOST` (another holder has
 * it), `FENCE_REGRESSION` (the store answered a lower fence) or `REVOKED` (`tenure revoke`).
 */
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

    /** Why the keep-alive stopped on its own (see [KeepAliveStop]), once it has. */
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
     * getting through before the lease runs out; [warning] before, once renewals keep failing
     * and less than [warnBelow] of validity is left (a third of the lease without; it must be
     * under half the lease).
     */
    @JvmOverloads
    fun keepAlive(maxHold: Duration? = null, warnBelow: Duration? = null) =
        call { raw.keepAlive(maxHold.seconds(), warnBelow.seconds()) }

    /** [keepAlive] with `java.time.Duration`s. */
    @JvmOverloads
    fun keepAlive(maxHold: java.time.Duration, warnBelow: java.time.Duration? = null) =
        keepAlive(maxHold.toKotlinDuration(), warnBelow?.toKotlinDuration())

    /** Completes with `true` the moment the lease is lost (or a keep-alive reached its maximum hold), with `false` once it is released. */
    suspend fun lost(): Boolean = call { raw.lost() }

    /**
     * Completes at the keep-alive's next warning — renewals keep failing and its validity is
     * running out — with the validity left, or with `null` once the lease is released or lost:
     * the work's chance to checkpoint before the loss.
     */
    suspend fun warning(): Duration? = raw.warning()?.seconds

    /**
     * On the write side of a [ReadWriteLock]: whether the writer before this one let its lease
     * run out without releasing (what it protects may be half-written), or this lease lapsed and
     * an extend granted it again.
     */
    val poisoned: Boolean get() = raw.poisoned()

    /**
     * On the write side of a [ReadWriteLock]: turns the write lease into a read lease in one
     * step, with no writer in between; the generation read (this write's fencing token). Not
     * while a keep-alive renews it.
     */
    suspend fun downgrade(): Long = call { raw.downgrade() }

    /** [downgrade], blocking the calling thread. */
    fun downgradeBlocking(): Long = call { raw.downgradeBlocking() }

    /** The core's [LockLostException] for this lease, saying why its keep-alive ended. */
    internal fun lostError(): TenureException =
        try {
            call { raw.lostError() }
            throw IllegalStateException("the native layer did not report the lost lease as an error (a bug)")
        } catch (e: TenureException) {
            e
        }

    /**
     * [work]'s result, cancelled the moment the lease is lost, which then throws [lostError];
     * [onWarning] called at each warning meanwhile (what it throws is logged, never let out).
     */
    internal suspend fun <T> holding(onWarning: (suspend (Duration) -> Unit)?, work: suspend () -> T): T = coroutineScope {
        val warner = onWarning?.let { told -> launch { tellWarnings(told) } }
        try {
            held(work)
        } finally {
            warner?.cancel()
        }
    }

    private suspend fun tellWarnings(onWarning: suspend (Duration) -> Unit) {
        while (true) {
            // (the next warning this loop was not told of: none is missed while the callback runs)
            val left = raw.nextWarning()?.seconds ?: return
            try {
                onWarning(left)
            } catch (e: CancellationException) {
                // This warner cancelled (the block ended): stop. The callback's own timeout: log it.
                currentCoroutineContext().ensureActive()
                TenureLogging.logger.log(Level.WARNING, "onWarning of the lock \"$name\" was cancelled; the lease is still kept", e)
            } catch (e: Throwable) {
                TenureLogging.logger.log(Level.WARNING, "onWarning of the lock \"$name\" threw; the lease is still kept", e)
            }
        }
    }

    private suspend fun <T> held(work: suspend () -> T): T = coroutineScope {
        val job = async { work() }
        val lost = async { lost() }
        select {
            job.onAwait { lost.cancel(); it }
            lost.onAwait { wasLost ->
                if (wasLost) {
                    job.cancel()
                    throw lostError()
                }
                job.await()
            }
        }
    }

    /** Releases unless released already (see the class). */
    override fun close() {
        if (released.compareAndSet(false, true)) call { raw.releaseBlocking() }
    }

    override fun toString() = "LockGuard($name, fencingToken=$fencingToken)"
}

/**
 * The acquires every primitive whose acquire gives one [LockGuard] shares (a [Lock], a
 * [Semaphore], a side of a [ReadWriteLock]), over its native calls (`timeout` in seconds, `null`
 * to wait as long as it takes). Cancelling a coroutine that waits never leaves it taken, even by
 * a grant that lands afterwards.
 */
abstract class Acquirable internal constructor() {
    internal abstract suspend fun take(timeout: Double?): Ffi

    internal abstract fun takeBlocking(timeout: Double?): Ffi

    internal abstract suspend fun attempt(): Ffi

    internal abstract fun attemptBlocking(): Ffi

    /** Acquires, waiting up to [timeout] (forever without one): a [LockTimeoutException] if it does not come in time. */
    suspend fun acquire(timeout: Duration? = null): LockGuard = LockGuard(call { take(timeout?.seconds()) })

    /** [acquire], blocking the calling thread (for Java: `try (LockGuard g = lock.acquireBlocking(…))`). */
    @JvmOverloads
    fun acquireBlocking(timeout: java.time.Duration? = null): LockGuard = LockGuard(call { takeBlocking(timeout?.seconds()) })

    /** One attempt: a [WouldBlockException] if it is taken. */
    suspend fun tryAcquire(): LockGuard = LockGuard(call { attempt() })

    /** [tryAcquire], blocking the calling thread. */
    fun tryAcquireBlocking(): LockGuard = LockGuard(call { attemptBlocking() })

    /**
     * Runs [block] holding it, with its fencing token, and releases it when the block ends (in
     * `finally`: on an exception or a cancellation too). Waits up to [timeout] to acquire.
     * Meanwhile the lease is kept alive (a renewal every third of it) for at most [maxHold] (no
     * bound without one); the moment it is lost — renewals did not get through before it ran
     * out, another holder took it, or [maxHold] passed — the block is cancelled (at its next
     * suspension) and `withLock` throws a [LockLostException] saying why. [onWarning] is called
     * with the validity left when renewals keep failing and less than [warnBelow] of it is left
     * (a third of the lease without): the block's chance to checkpoint.
     */
    suspend fun <T> withLock(
        timeout: Duration? = null,
        maxHold: Duration? = null,
        warnBelow: Duration? = null,
        onWarning: (suspend (left: Duration) -> Unit)? = null,
        block: suspend (fencingToken: Long) -> T,
    ): T = scoped { acquire(timeout).holdFor(maxHold, warnBelow, onWarning, block) }

    /** Runs [block] as the caller a `withLock` acquires and works as (a side of a read-write lock: one). */
    internal open suspend fun <T> scoped(block: suspend () -> T): T = block()
}

/**
 * [block]'s result, run with this guard's fencing token while its lease is kept alive for at
 * most [maxHold], cancelled the moment the lease is lost (which then throws the core's
 * [LockLostException]), and the lease released at the end however it ends: the `withLock` of
 * every primitive.
 */
internal suspend fun <T> LockGuard.holdFor(
    maxHold: Duration?,
    warnBelow: Duration?,
    onWarning: (suspend (Duration) -> Unit)?,
    block: suspend (fencingToken: Long) -> T,
): T =
    ending({ release() }) {
        keepAlive(maxHold, warnBelow)
        holding(onWarning) { block(fencingToken) }
    }
