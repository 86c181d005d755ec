package tenure

import kotlin.time.Duration
import kotlin.time.toKotlinDuration
import tenure.ffi.Lock as Ffi
import tenure.ffi.LockOptions as FfiOptions

/**
 * A lock's settings. What is left `null` comes from the `GREL_LOCK_*` environment variables
 * (unless [envLoad] is false), then from grelmicro's defaults: a 60 s lease, 0.1 s between
 * attempts with 10 % jitter, 5 s per store call. From Java:
 * `new LockOptions().withLeaseDuration(Duration.ofSeconds(30))`.
 */
data class LockOptions @JvmOverloads constructor(
    /** This process's identity (random if not given). */
    val worker: String? = null,
    val leaseDuration: Duration? = null,
    val retryInterval: Duration? = null,
    /** Spread of each retry, a factor in [0, 1). */
    val retryJitter: Double? = null,
    /** Bound on each store call. */
    val backendTimeout: Duration? = null,
    /** Prefix of the variables read (default `GREL_LOCK_{NAME}_`). */
    val envPrefix: String? = null,
    val envLoad: Boolean? = null,
) {
    fun withWorker(worker: String) = copy(worker = worker)
    fun withLeaseDuration(d: java.time.Duration) = copy(leaseDuration = d.toKotlinDuration())
    fun withRetryInterval(d: java.time.Duration) = copy(retryInterval = d.toKotlinDuration())
    fun withRetryJitter(jitter: Double) = copy(retryJitter = jitter)
    fun withBackendTimeout(d: java.time.Duration) = copy(backendTimeout = d.toKotlinDuration())
    fun withEnvPrefix(prefix: String) = copy(envPrefix = prefix)
    fun withEnvLoad(load: Boolean) = copy(envLoad = load)

    internal fun raw() = FfiOptions(
        worker, leaseDuration.seconds(), retryInterval.seconds(), retryJitter, backendTimeout.seconds(), envPrefix, envLoad,
    )
}

/** A lock's resolved settings. */
data class LockSettings(
    val worker: String,
    val leaseDuration: Duration,
    val retryInterval: Duration,
    val retryJitter: Double,
    val backendTimeout: Duration,
)

/**
 * A distributed lock with fencing tokens. Each acquire is its own holder, proven by the
 * [LockGuard] it returns, so acquires from several coroutines or threads contend as separate
 * holders; nothing is reentrant.
 *
 * ```
 * val lock = Lock("orders", store, LockOptions(leaseDuration = 30.seconds))
 * lock.withLock(timeout = 5.seconds) { token -> db.write(order, fence = token) }
 * ```
 */
class Lock @JvmOverloads constructor(name: String, store: Store, options: LockOptions = LockOptions()) {
    private val raw: Ffi = call { Ffi(name, store.raw, options.raw()) }

    /** The lock name. */
    val name: String get() = raw.name()

    /** The resolved settings. */
    fun settings(): LockSettings = raw.settings().let {
        LockSettings(it.worker, it.leaseDuration.toSeconds(), it.retryInterval.toSeconds(), it.retryJitter, it.backendTimeout.toSeconds())
    }

    /** Applies the durations and jitter of [options] from the next call on (the worker stays). */
    fun reconfigure(options: LockOptions) = call { raw.reconfigure(options.raw()) }

    /**
     * Acquires, waiting up to [timeout] (forever without one): a [LockTimeoutException] if it does
     * not come in time. Cancelling the coroutine never leaves the lock taken, even by a grant that
     * lands afterwards.
     */
    suspend fun acquire(timeout: Duration? = null): LockGuard =
        LockGuard(call { if (timeout == null) raw.acquire() else raw.acquireTimeout(timeout.seconds()) })

    /** [acquire], blocking the calling thread (for Java: `try (LockGuard g = lock.acquireBlocking(…))`). */
    @JvmOverloads
    fun acquireBlocking(timeout: java.time.Duration? = null): LockGuard =
        LockGuard(call { if (timeout == null) raw.acquireBlocking() else raw.acquireTimeoutBlocking(timeout.seconds()) })

    /** One attempt: a [WouldBlockException] if the lock is taken. */
    suspend fun tryAcquire(): LockGuard = LockGuard(call { raw.tryAcquire() })

    /** [tryAcquire], blocking the calling thread. */
    fun tryAcquireBlocking(): LockGuard = LockGuard(call { raw.tryAcquireBlocking() })

    /** Whether anyone holds the lock. */
    suspend fun locked(): Boolean = call { raw.locked() }

    /** [locked], blocking the calling thread. */
    fun lockedBlocking(): Boolean = call { raw.lockedBlocking() }

    /**
     * Runs [block] holding the lock, with its fencing token, and releases it when the block ends
     * (in `finally`: on an exception or a cancellation too). Waits up to [timeout] to acquire.
     */
    suspend fun <T> withLock(timeout: Duration? = null, block: suspend (fencingToken: Long) -> T): T {
        val guard = acquire(timeout)
        return ending({ guard.release() }) { block(guard.fencingToken) }
    }

    override fun toString() = "Lock($name)"
}
