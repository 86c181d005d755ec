package tenure

import java.util.concurrent.atomic.AtomicBoolean
import kotlin.time.Duration
import kotlin.time.toKotlinDuration
import tenure.ffi.TaskLock as Ffi
import tenure.ffi.TaskLockOptions as FfiOptions
import tenure.ffi.TaskRun as FfiRun

/**
 * A task lock's settings. What is left `null` comes from the `GREL_TASKLOCK_*` environment
 * variables (unless [envLoad] is false), then from grelmicro's defaults: held at least 1 s after
 * a run starts, at most 60 s unless extended, 5 s per store call.
 */
data class TaskLockOptions @JvmOverloads constructor(
    val worker: String? = null,
    /** How long the lock stays taken after a run starts, even if it ends sooner (ShedLock's `lockAtLeastFor`). */
    val minHoldDuration: Duration? = null,
    /** The most a run may hold it unless extended (ShedLock's `lockAtMostFor`). */
    val leaseDuration: Duration? = null,
    val backendTimeout: Duration? = null,
    val envPrefix: String? = null,
    val envLoad: Boolean? = null,
    /** What the task is, shown with each run's holder by [TaskLock.state] and `tenure locks`. */
    val purpose: String? = null,
) {
    fun withWorker(worker: String) = copy(worker = worker)
    fun withPurpose(purpose: String) = copy(purpose = purpose)
    fun withMinHoldDuration(d: java.time.Duration) = copy(minHoldDuration = d.toKotlinDuration())
    fun withLeaseDuration(d: java.time.Duration) = copy(leaseDuration = d.toKotlinDuration())
    fun withBackendTimeout(d: java.time.Duration) = copy(backendTimeout = d.toKotlinDuration())
    fun withEnvPrefix(prefix: String) = copy(envPrefix = prefix)
    fun withEnvLoad(load: Boolean) = copy(envLoad = load)

    internal fun raw() = FfiOptions(
        worker, minHoldDuration.seconds(), leaseDuration.seconds(), backendTimeout.seconds(), envPrefix, envLoad, purpose,
    )
}

/** A task lock's resolved settings. */
data class TaskLockSettings(
    val worker: String,
    val minHoldDuration: Duration,
    val leaseDuration: Duration,
    val backendTimeout: Duration,
)

/**
 * At most one run of a job per [TaskLockOptions.minHoldDuration] window across every worker: a
 * scheduled job on every replica.
 *
 * ```
 * val report = TaskLock("nightly-report", store, TaskLockOptions(minHoldDuration = 1.minutes))
 * report.runOnce { token -> build(token) } ?: println("another replica ran it")
 * ```
 */
class TaskLock @JvmOverloads constructor(name: String, store: Store, options: TaskLockOptions = TaskLockOptions()) {
    private val raw: Ffi = call { Ffi(name, store.raw, options.raw()) }

    /** The task lock [name] on the lock store of the enclosing [Coordination.run]. */
    @JvmOverloads
    constructor(name: String, options: TaskLockOptions = TaskLockOptions()) :
        this(name, Coordination.ambient(Coordination.LOCK), options)

    /** The task lock name. */
    val name: String get() = raw.name()

    /** The resolved settings. */
    fun settings(): TaskLockSettings = raw.settings().let {
        TaskLockSettings(it.worker, it.minHoldDuration.toSeconds(), it.leaseDuration.toSeconds(), it.backendTimeout.toSeconds())
    }

    /** Applies the durations of [options] from the next run on (the worker stays). */
    fun reconfigure(options: TaskLockOptions) = call { raw.reconfigure(options.raw()) }

    /**
     * Starts a run, or throws [WouldBlockException] at once (another worker's run, or this
     * window's minimum hold); [LockReentrantException] while this instance runs.
     */
    suspend fun enter(): TaskRun = TaskRun(call { raw.enter() })

    /** [enter], blocking the calling thread (for Java: `try (TaskRun run = task.enterBlocking())`). */
    fun enterBlocking(): TaskRun = TaskRun(call { raw.enterBlocking() })

    /** Whether anyone holds the task lock. */
    suspend fun locked(): Boolean = call { raw.locked() }

    /** [locked], blocking the calling thread. */
    fun lockedBlocking(): Boolean = call { raw.lockedBlocking() }

    /** Who runs the task: as [Lock.state]. */
    suspend fun state(): LockState = call { raw.state() }.kotlin()

    /** [state], blocking the calling thread. */
    fun stateBlocking(): LockState = call { raw.stateBlocking() }.kotlin()

    /**
     * Runs [block] if no worker ran this job within the window, with the run's fencing token, and
     * exits the run when it ends; `null` if another worker's run (or this window's) holds it.
     */
    suspend fun <T> runOnce(block: suspend (fencingToken: Long) -> T): T? {
        val run = try {
            enter()
        } catch (e: WouldBlockException) {
            return null
        }
        return ending({ run.exit() }) { block(run.fencingToken) }
    }

    override fun toString() = "TaskLock($name)"
}

/** One run under a task lock. [close] exits it if it has not exited yet. */
class TaskRun internal constructor(private val raw: FfiRun) : AutoCloseable {
    private val exited = AtomicBoolean(false)

    /** The fencing token of this run. */
    val fencingToken: Long = raw.fencingToken()

    /** Whether the run may still count on its lease. */
    val isValid: Boolean get() = raw.isValid()

    /** Renews the lease for another lease duration (grelmicro's `refresh`). */
    suspend fun extend() = call { raw.extend() }

    /** [extend], blocking the calling thread. */
    fun extendBlocking() = call { raw.extendBlocking() }

    /**
     * Ends the run: the lock stays taken until the minimum hold has passed since the start.
     * [LockNotOwnedException] if the lease was lost (the job outlived it).
     */
    suspend fun exit() {
        exited.set(true)
        call { raw.exit() }
    }

    /** [exit], blocking the calling thread. */
    fun exitBlocking() {
        exited.set(true)
        call { raw.exitBlocking() }
    }

    /** Exits the run unless it exited already. */
    override fun close() {
        if (exited.compareAndSet(false, true)) call { raw.exitBlocking() }
    }

    override fun toString() = "TaskRun(fencingToken=$fencingToken)"
}
