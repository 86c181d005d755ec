package tenure

import java.time.Instant
import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlin.time.toKotlinDuration
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.selects.select
import tenure.ffi.ElectionOptions as FfiOptions
import tenure.ffi.LeaderElection as Ffi

/**
 * An election's settings. What is left `null` comes from the `GREL_LEADERELECTION_*`
 * environment variables (unless [envLoad] is false), then from grelmicro's defaults: a 15 s
 * lease, renewals given up after 10 s, 2 s between attempts with 10 % jitter, 5 s per store call.
 */
data class ElectionOptions @JvmOverloads constructor(
    val worker: String? = null,
    val leaseDuration: Duration? = null,
    /** How long a leader keeps trying to renew before it stops leading; shorter than the lease. */
    val renewDeadline: Duration? = null,
    val retryInterval: Duration? = null,
    val retryJitter: Double? = null,
    val backendTimeout: Duration? = null,
    /** Least time between two logged errors. */
    val errorInterval: Duration? = null,
    val envPrefix: String? = null,
    val envLoad: Boolean? = null,
    /** Stored on the record while this worker leads (pod name, version, region). */
    val metadata: Map<String, String>? = null,
    /**
     * What this worker leads for, shown with its host, pid and program by `tenure locks` while it
     * leads (1 to 256 bytes), given when it is made.
     */
    val purpose: String? = null,
) {
    fun withWorker(worker: String) = copy(worker = worker)
    fun withLeaseDuration(d: java.time.Duration) = copy(leaseDuration = d.toKotlinDuration())
    fun withRenewDeadline(d: java.time.Duration) = copy(renewDeadline = d.toKotlinDuration())
    fun withRetryInterval(d: java.time.Duration) = copy(retryInterval = d.toKotlinDuration())
    fun withRetryJitter(jitter: Double) = copy(retryJitter = jitter)
    fun withBackendTimeout(d: java.time.Duration) = copy(backendTimeout = d.toKotlinDuration())
    fun withErrorInterval(d: java.time.Duration) = copy(errorInterval = d.toKotlinDuration())
    fun withEnvPrefix(prefix: String) = copy(envPrefix = prefix)
    fun withEnvLoad(load: Boolean) = copy(envLoad = load)
    fun withMetadata(metadata: Map<String, String>) = copy(metadata = metadata)
    fun withPurpose(purpose: String) = copy(purpose = purpose)

    internal fun raw() = FfiOptions(
        worker, leaseDuration.seconds(), renewDeadline.seconds(), retryInterval.seconds(), retryJitter,
        backendTimeout.seconds(), errorInterval.seconds(), envPrefix, envLoad, metadata, purpose,
    )
}

/** An election's resolved settings. */
data class ElectionSettings(
    val worker: String,
    val leaseDuration: Duration,
    val renewDeadline: Duration,
    val retryInterval: Duration,
    val retryJitter: Double,
    val backendTimeout: Duration,
    val errorInterval: Duration,
)

/** Who leads, as the store last said. */
data class LeaderRecord(
    /** The leader's worker identity. */
    val holder: String,
    val leaseDuration: Duration,
    val acquiredAt: Instant,
    val renewedAt: Instant,
    /** How many times leadership changed hands. */
    val transitions: Long,
    val metadata: Map<String, String>,
)

/**
 * Hears every change of leadership, in order and one at a time, on a thread of Tenure's own
 * (never one that renews the lease): `true` when this worker starts leading, `false` when it
 * stops. What it throws goes to its thread's uncaught-exception handler.
 */
fun interface LeadershipListener {
    fun onChange(leading: Boolean)
}

private class Told(private val listener: LeadershipListener) : tenure.ffi.LeadershipListener {
    override fun onChange(leading: Boolean) {
        try {
            listener.onChange(leading)
        } catch (e: Throwable) {
            val thread = Thread.currentThread()
            thread.uncaughtExceptionHandler?.uncaughtException(thread, e)
        }
    }
}

/**
 * A leader election: while [start]ed, one worker at a time leads [name] across every process
 * on the store. [close] stops it and releases leadership at once.
 *
 * ```
 * val election = LeaderElection("scheduler", store)
 * election.start { leading -> println(if (leading) "leading" else "following") }
 * election.lead(repeat = true) { runScheduler() }   // cancelled the moment leadership is lost
 * ```
 */
class LeaderElection @JvmOverloads constructor(name: String, store: Store, options: ElectionOptions = ElectionOptions()) :
    AutoCloseable {
    private val raw: Ffi = call { Ffi(name, store.raw, options.raw()) }

    /** The election [name] on the election store of the enclosing [Coordination.run]. */
    @JvmOverloads
    constructor(name: String, options: ElectionOptions = ElectionOptions()) :
        this(name, Coordination.ambient(Coordination.ELECTION), options)

    /** The election name. */
    val name: String get() = raw.name()

    /** This worker's identity (the record's holder while it leads). */
    val worker: String get() = raw.worker()

    /** Whether the loop runs (until the release after a stop has finished). */
    val isRunning: Boolean get() = raw.isRunning()

    /** Whether this worker leads, as far as it knows; see [isLeaderConfirmedWithin]. */
    val isLeader: Boolean get() = raw.isLeader()

    /**
     * While this worker leads: its term's fencing token (higher for every term, never reset; send
     * it with every write the leader makes); null when not leading, or on a store that keeps none.
     */
    val fencingToken: Long? get() = raw.fencingToken()

    /** Time since the store last confirmed this worker's leadership, while it leads. */
    val lastConfirmationAge: Duration? get() = raw.lastConfirmationAge()?.toSeconds()

    /** The last record the store returned, if any. */
    val record: LeaderRecord? get() = raw.record()?.let {
        LeaderRecord(it.holder, it.leaseDuration.toSeconds(), it.acquiredAt, it.renewedAt, it.transitions.toLong(), it.metadata)
    }

    /** The resolved settings. */
    fun settings(): ElectionSettings = raw.settings().let {
        ElectionSettings(
            it.worker, it.leaseDuration.toSeconds(), it.renewDeadline.toSeconds(), it.retryInterval.toSeconds(),
            it.retryJitter, it.backendTimeout.toSeconds(), it.errorInterval.toSeconds(),
        )
    }

    /** Applies the durations and jitter of [options] at the loop's next turn (worker and metadata stay). */
    fun reconfigure(options: ElectionOptions) = call { raw.reconfigure(options.raw()) }

    /** Starts the election loop in the background (false if it runs already); [listener] hears every change from now on. */
    @JvmOverloads
    fun start(listener: LeadershipListener? = null): Boolean = raw.start(listener?.let(::Told))

    /** Stops the loop: leadership ends at once; returns once the lease is released, so a follower takes over without waiting. */
    suspend fun stop() = raw.stop()

    /** [stop], blocking the calling thread. */
    fun stopBlocking() = call { raw.stopBlocking() }

    /** Whether this worker leads and the store confirmed it at most [maxAge] ago. */
    fun isLeaderConfirmedWithin(maxAge: Duration): Boolean = call { raw.isLeaderConfirmedWithin(maxAge.seconds()) }

    /** [isLeaderConfirmedWithin] with a `java.time.Duration`. */
    fun isLeaderConfirmedWithin(maxAge: java.time.Duration): Boolean = isLeaderConfirmedWithin(maxAge.toKotlinDuration())

    /**
     * The leader health check (client-go's): `null` when healthy, else why not — this worker
     * believes it leads but the store has not confirmed it within its renew deadline plus
     * [tolerance] (its loop is stuck). Answer 503 from a health route when it is not `null`.
     */
    fun health(tolerance: Duration = 10.seconds): String? = call { raw.health(tolerance.seconds()) }

    /** [health] with a `java.time.Duration`. */
    fun health(tolerance: java.time.Duration): String? = health(tolerance.toKotlinDuration())

    /** Returns once this worker leads (the loop must run). */
    suspend fun waitForLeader() = raw.waitForLeader()

    /** Returns once this worker does not lead. */
    suspend fun waitLoseLeader() = raw.waitLoseLeader()

    /** Waits until this worker leads, up to [timeout] (forever without one): whether it leads. */
    @JvmOverloads
    fun waitForLeaderBlocking(timeout: java.time.Duration? = null): Boolean =
        call { raw.waitForLeaderBlocking(timeout.seconds()) }

    /** Waits until this worker does not lead, up to [timeout] (forever without one): whether it stopped leading. */
    @JvmOverloads
    fun waitLoseLeaderBlocking(timeout: java.time.Duration? = null): Boolean =
        call { raw.waitLoseLeaderBlocking(timeout.seconds()) }

    /**
     * Runs [block] only while this worker leads: waits for leadership, runs it, and cancels it
     * the moment leadership is lost (cancellation is cooperative: it lands at the block's next
     * suspension; fence writes that must never overlap a successor). Returns the block's result,
     * or `null` if leadership was lost first. With [repeat], runs it again after each completion
     * and after each re-election, until the calling coroutine is cancelled. The election must
     * run ([start]).
     */
    suspend fun <T> lead(repeat: Boolean = false, block: suspend CoroutineScope.() -> T): T? {
        while (true) {
            waitForLeader()
            val done: Result<T>? = coroutineScope {
                val work = async { block() }
                val lost = async { waitLoseLeader() }
                select {
                    work.onAwait { lost.cancel(); Result.success(it) }
                    lost.onAwait { work.cancel(); null }
                }
            }
            if (!repeat) return done?.getOrThrow()
        }
    }

    /** Stops the election, releasing leadership at once ([stopBlocking]). */
    override fun close() = stopBlocking()

    override fun toString() = "LeaderElection($name)"
}
