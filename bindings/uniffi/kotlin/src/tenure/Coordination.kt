package tenure

import java.util.concurrent.Callable
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.asContextElement
import kotlinx.coroutines.withContext
import tenure.ffi.Coordination as Ffi

/**
 * grelmicro's `Coordination`: which store serves each kind of primitive. [store] serves every
 * kind it can (a built-in store serves them all; a store of your own its lock calls, its election
 * calls, or both), and a store given for one kind replaces it there ([lock] for locks and task
 * locks, [election], [readWriteLock], [semaphore]).
 *
 * [requires] (`process`, `host` or `cluster`, the default) is how far the stores' locks must
 * exclude: where `GREL_ENVIRONMENT` is `staging` or `production`, a store that reaches less far
 * (memory, SQLite) is a [BackendScopeException] here; where it is unset or unknown, a warning is
 * logged. A store of your own that declares no scope is not judged.
 *
 * ```
 * val coordination = Coordination(Store.open("redis://cache:6379"))
 * coordination.lock("orders").withLock { token -> write(token) }
 * coordination.run {
 *     Lock("orders").withLock { token -> write(token) }   // no store: this component's
 * }
 * ```
 */
class Coordination @JvmOverloads constructor(
    store: Store? = null,
    lock: Store? = null,
    election: Store? = null,
    readWriteLock: Store? = null,
    semaphore: Store? = null,
    name: String = "default",
    requires: String = "cluster",
) {
    private val raw: Ffi = call { Ffi(store?.raw, lock?.raw, election?.raw, readWriteLock?.raw, semaphore?.raw, name, requires) }

    /** The registration name. */
    val name: String get() = raw.name()

    /** The reach its stores must have: `process`, `host` or `cluster`. */
    val requires: String get() = raw.requires()

    /** The lock [name] on this component's lock store. */
    @JvmOverloads
    fun lock(name: String, options: LockOptions = LockOptions()) = Lock(name, slot(LOCK), options)

    /** The task lock [name] on this component's lock store. */
    @JvmOverloads
    fun taskLock(name: String, options: TaskLockOptions = TaskLockOptions()) = TaskLock(name, slot(LOCK), options)

    /** The election [name] on this component's election store. */
    @JvmOverloads
    fun leaderElection(name: String, options: ElectionOptions = ElectionOptions()) = LeaderElection(name, slot(ELECTION), options)

    /** The read-write lock [name] on this component's read-write lock store. */
    @JvmOverloads
    fun readWriteLock(name: String, options: LockOptions = LockOptions()) = ReadWriteLock(name, slot(READ_WRITE), options)

    /** The semaphore [name] of [permits] permits on this component's semaphore store. */
    @JvmOverloads
    fun semaphore(name: String, permits: Int, options: LockOptions = LockOptions()) =
        Semaphore(name, permits, slot(SEMAPHORE), options)

    /**
     * Runs [block] with this component as the store of every primitive made without one
     * (`Lock("orders")`), in [block] and the coroutines it starts, as grelmicro's `async with
     * micro:` does. Runs nest; the innermost wins.
     */
    suspend fun <T> run(block: suspend CoroutineScope.() -> T): T = withContext(AMBIENT.asContextElement(this), block)

    /** [run] for Java: [block] runs on this thread with this component as the ambient one. */
    fun <T> runBlocking(block: Callable<T>): T {
        val outer = AMBIENT.get()
        AMBIENT.set(this)
        try {
            return block.call()
        } finally {
            AMBIENT.set(outer)
        }
    }

    private fun slot(slot: String) = Store.of(call { raw.slot(slot) })

    override fun toString() = "Coordination($name)"

    internal companion object {
        const val LOCK = "lock"
        const val ELECTION = "election"
        const val READ_WRITE = "read_write_lock"
        const val SEMAPHORE = "semaphore"

        private val AMBIENT = ThreadLocal<Coordination?>()

        /** The [slot] store of the component of the enclosing [run]. */
        fun ambient(slot: String): Store = (AMBIENT.get() ?: throw OutOfContextException(OUT_OF_CONTEXT)).slot(slot)

        private const val OUT_OF_CONTEXT = "No backend resolved in this scope. Pass a store (Store.memory() for a " +
            "per-process lock), or make the primitive inside coordination.run { }."
    }
}
