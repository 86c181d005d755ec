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
    /**
     * What the lock, read-write lock or semaphore is held for, shown with each holder's host,
     * pid and program by `tenure locks` (and a lock's by [Lock.state]); 1 to 256 bytes, given
     * when it is made ([Lock.reconfigure] refuses it).
     */
    val purpose: String? = null,
) {
    fun withWorker(worker: String) = copy(worker = worker)
    fun withPurpose(purpose: String) = copy(purpose = purpose)
    fun withLeaseDuration(d: java.time.Duration) = copy(leaseDuration = d.toKotlinDuration())
    fun withRetryInterval(d: java.time.Duration) = copy(retryInterval = d.toKotlinDuration())
    fun withRetryJitter(jitter: Double) = copy(retryJitter = jitter)
    fun withBackendTimeout(d: java.time.Duration) = copy(backendTimeout = d.toKotlinDuration())
    fun withEnvPrefix(prefix: String) = copy(envPrefix = prefix)
    fun withEnvLoad(load: Boolean) = copy(envLoad = load)

    internal fun raw() = FfiOptions(
        worker, leaseDuration.seconds(), retryInterval.seconds(), retryJitter, backendTimeout.seconds(), envPrefix, envLoad,
        purpose,
    )
}

/** A lock's resolved settings (a read-write lock's, a semaphore's). */
data class LockSettings(
    val worker: String,
    val leaseDuration: Duration,
    val retryInterval: Duration,
    val retryJitter: Double,
    val backendTimeout: Duration,
)

internal fun tenure.ffi.LockSettings.kotlin() =
    LockSettings(worker, leaseDuration.toSeconds(), retryInterval.toSeconds(), retryJitter, backendTimeout.toSeconds())

/** What every primitive with a lock's settings has: a [Lock], a [ReadWriteLock], a [Semaphore]. */
interface Configurable {
    /** The name. */
    val name: String

    /** The resolved settings. */
    fun settings(): LockSettings

    /** Applies the durations and jitter of [options] from the next call on (the worker stays). */
    fun reconfigure(options: LockOptions)
}

/** The [Configurable] of a native primitive, by its calls. */
internal fun configurable(
    rawName: () -> String,
    rawSettings: () -> tenure.ffi.LockSettings,
    rawReconfigure: (FfiOptions) -> Unit,
): Configurable = object : Configurable {
    override val name: String get() = rawName()

    override fun settings(): LockSettings = rawSettings().kotlin()

    override fun reconfigure(options: LockOptions) = call { rawReconfigure(options.raw()) }
}

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
class Lock private constructor(private val raw: Ffi) :
    Acquirable(),
    Configurable by configurable(raw::name, raw::settings, raw::reconfigure) {
    /** The lock [name] on [store]. */
    @JvmOverloads
    constructor(name: String, store: Store, options: LockOptions = LockOptions()) : this(call { Ffi(name, store.raw, options.raw()) })

    /** The lock [name] on the lock store of the enclosing [Coordination.run]. */
    @JvmOverloads
    constructor(name: String, options: LockOptions = LockOptions()) : this(name, Coordination.ambient(Coordination.LOCK), options)

    override suspend fun take(timeout: Double?) = if (timeout == null) raw.acquire() else raw.acquireTimeout(timeout)

    override fun takeBlocking(timeout: Double?) = if (timeout == null) raw.acquireBlocking() else raw.acquireTimeoutBlocking(timeout)

    override suspend fun attempt() = raw.tryAcquire()

    override fun attemptBlocking() = raw.tryAcquireBlocking()

    /** Whether anyone holds the lock. */
    suspend fun locked(): Boolean = call { raw.locked() }

    /** [locked], blocking the calling thread. */
    fun lockedBlocking(): Boolean = call { raw.lockedBlocking() }

    /** Who holds the lock: worker, fencing token, lease end and what the holder told the store. */
    suspend fun state(): LockState = call { raw.state() }.kotlin()

    /** [state], blocking the calling thread. */
    fun stateBlocking(): LockState = call { raw.stateBlocking() }.kotlin()

    override fun toString() = "Lock($name)"
}
