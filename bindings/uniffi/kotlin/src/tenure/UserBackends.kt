// Backends written in Kotlin or Java: grelmicro's lock, election and read-write lock calls and
// Tenure's semaphore calls, which the
// driver calls like a built-in store's (tenure::backend::user): it checks every answer's shape
// and range, refuses a fencing token that goes back, and bounds each call by `backendTimeout`,
// cancelling the coroutine of a call it gives up. This file only forwards calls and converts
// values.
package tenure

import kotlin.coroutines.cancellation.CancellationException
import kotlin.time.Duration
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runInterruptible
import tenure.ffi.UserAnswer
import tenure.ffi.UserCallArgs
import tenure.ffi.UserCallException
import tenure.ffi.UserCalls
import tenure.ffi.CustomCalls
import tenure.ffi.LeaderRecord as FfiRecord

/**
 * The lock calls of a store you write (grelmicro's `LockBackend`), for locks and task locks.
 * Names come with their kind prefix (`lock:orders`); tokens are opaque.
 */
interface LockBackend {
    /**
     * Takes [name] for [token] for [duration], or renews it when [token] holds it: the fencing
     * token (a positive count that never goes back for a name, also across expiry and release),
     * or `null` when another token holds it.
     */
    suspend fun acquire(name: String, token: String, duration: Duration): Long?

    /** Frees [name] if [token] holds it; whether it did. */
    suspend fun release(name: String, token: String): Boolean

    /** Whether any token holds [name]. */
    suspend fun locked(name: String): Boolean

    /** Whether [token] holds [name]. */
    suspend fun owned(name: String, token: String): Boolean
}

/**
 * The election calls of a store you write (grelmicro's `LeaderElectionBackend`). A class that
 * implements [LockBackend] too has one `release` for both, as in grelmicro: names carry their
 * kind (`lock:orders`, `leader:scheduler`).
 */
interface LeaderElectionBackend {
    /**
     * Makes [token] the leader of [name] for [duration] if nobody leads or it leads already
     * (renewing), and answers the record as it stands: [token]'s, or the current leader's.
     */
    suspend fun acquireOrRenew(name: String, token: String, duration: Duration, metadata: Map<String, String>): LeaderRecord

    /** Ends [token]'s leadership of [name]; whether it led. */
    suspend fun release(name: String, token: String): Boolean

    /** The record of [name]'s leader, or `null` when nobody leads. */
    suspend fun get(name: String): LeaderRecord?
}

/** A write grant, as a [ReadWriteLockBackend]'s `acquireWrite` answers it. */
data class WriteGrant(
    /** Strictly increasing per name, across every write. */
    val fencingToken: Long,
    /** The writer before this one let its lease run out without releasing. */
    val poisoned: Boolean,
)

/**
 * The read-write lock calls of a store you write (grelmicro 0.44's `ReadWriteLockBackend`).
 * Names come as `rwlock:doc`. [acquireRead] answers the generation read (the fencing token of
 * the last write, 0 before the first), or `null` while a writer holds or waits with a live
 * intent; [acquireWrite] a grant, or `null`, keeping an intent for [duration] iff `intent`;
 * [downgrade] turns [token]'s write lease into a read lease and answers the generation.
 */
interface ReadWriteLockBackend {
    suspend fun acquireRead(name: String, token: String, duration: Duration): Long?
    suspend fun acquireWrite(name: String, token: String, duration: Duration, intent: Boolean): WriteGrant?
    suspend fun releaseRead(name: String, token: String): Boolean
    suspend fun releaseWrite(name: String, token: String): Boolean
    suspend fun cancelIntent(name: String, token: String): Boolean
    suspend fun downgrade(name: String, token: String, duration: Duration): Long?
    suspend fun state(name: String): ReadWriteLockState
    suspend fun ownedRead(name: String, token: String): Boolean
    suspend fun ownedWrite(name: String, token: String): Boolean
}

/** A semaphore's permit, as a [SemaphoreBackend]'s `acquire` answers it. */
data class Permit(
    /** The permit's fencing token (strictly increasing per name), or `null` when refused. */
    val fencingToken: Long?,
    /** The permit count stored for the name (the one asked, unless another is in use). */
    val permits: Int,
)

/**
 * The semaphore calls of a store you write (Tenure's; grelmicro has none). Names come as
 * `semaphore:pool`. [acquire] renews [token]'s permit (same fencing token) or grants one with the
 * next fencing token while fewer than the stored count hold; [wait] is how long a refused
 * contender may keep a place in line (`null`: none), which a store may ignore.
 */
interface SemaphoreBackend {
    suspend fun acquire(name: String, token: String, duration: Duration, permits: Int, wait: Duration?): Permit
    suspend fun release(name: String, token: String): Boolean
    suspend fun owned(name: String, token: String): Boolean
    suspend fun state(name: String): SemaphoreState
}

/**
 * [LockBackend] for Java: plain blocking methods (JDBC, an HTTP client), run on
 * `Dispatchers.IO`. A call the driver gives up interrupts its thread.
 */
interface BlockingLockBackend {
    fun acquire(name: String, token: String, duration: java.time.Duration): Long?
    fun release(name: String, token: String): Boolean
    fun locked(name: String): Boolean
    fun owned(name: String, token: String): Boolean
}

/** [LeaderElectionBackend] for Java: plain blocking methods, run on `Dispatchers.IO`. */
interface BlockingLeaderElectionBackend {
    fun acquireOrRenew(name: String, token: String, duration: java.time.Duration, metadata: Map<String, String>): LeaderRecord
    fun release(name: String, token: String): Boolean
    fun get(name: String): LeaderRecord?
}

/** [ReadWriteLockBackend] for Java: plain blocking methods, run on `Dispatchers.IO`. */
interface BlockingReadWriteLockBackend {
    fun acquireRead(name: String, token: String, duration: java.time.Duration): Long?
    fun acquireWrite(name: String, token: String, duration: java.time.Duration, intent: Boolean): WriteGrant?
    fun releaseRead(name: String, token: String): Boolean
    fun releaseWrite(name: String, token: String): Boolean
    fun cancelIntent(name: String, token: String): Boolean
    fun downgrade(name: String, token: String, duration: java.time.Duration): Long?
    fun state(name: String): ReadWriteLockState
    fun ownedRead(name: String, token: String): Boolean
    fun ownedWrite(name: String, token: String): Boolean
}

/** [SemaphoreBackend] for Java: plain blocking methods, run on `Dispatchers.IO` (`wait` is `null` when none is kept). */
interface BlockingSemaphoreBackend {
    fun acquire(name: String, token: String, duration: java.time.Duration, permits: Int, wait: java.time.Duration?): Permit
    fun release(name: String, token: String): Boolean
    fun owned(name: String, token: String): Boolean
    fun state(name: String): SemaphoreState
}

internal fun BlockingReadWriteLockBackend.suspending() = object : ReadWriteLockBackend {
    private val b = this@suspending
    override suspend fun acquireRead(name: String, token: String, duration: Duration) = blocking { b.acquireRead(name, token, duration.toJava()) }
    override suspend fun acquireWrite(name: String, token: String, duration: Duration, intent: Boolean) =
        blocking { b.acquireWrite(name, token, duration.toJava(), intent) }
    override suspend fun releaseRead(name: String, token: String) = blocking { b.releaseRead(name, token) }
    override suspend fun releaseWrite(name: String, token: String) = blocking { b.releaseWrite(name, token) }
    override suspend fun cancelIntent(name: String, token: String) = blocking { b.cancelIntent(name, token) }
    override suspend fun downgrade(name: String, token: String, duration: Duration) = blocking { b.downgrade(name, token, duration.toJava()) }
    override suspend fun state(name: String) = blocking { b.state(name) }
    override suspend fun ownedRead(name: String, token: String) = blocking { b.ownedRead(name, token) }
    override suspend fun ownedWrite(name: String, token: String) = blocking { b.ownedWrite(name, token) }
    override fun toString() = b.toString()
}

internal fun BlockingSemaphoreBackend.suspending() = object : SemaphoreBackend {
    private val b = this@suspending
    override suspend fun acquire(name: String, token: String, duration: Duration, permits: Int, wait: Duration?) =
        blocking { b.acquire(name, token, duration.toJava(), permits, wait?.toJava()) }
    override suspend fun release(name: String, token: String) = blocking { b.release(name, token) }
    override suspend fun owned(name: String, token: String) = blocking { b.owned(name, token) }
    override suspend fun state(name: String) = blocking { b.state(name) }
    override fun toString() = b.toString()
}

internal fun BlockingLockBackend.suspending() = object : LockBackend {
    override suspend fun acquire(name: String, token: String, duration: Duration) =
        blocking { this@suspending.acquire(name, token, duration.toJava()) }
    override suspend fun release(name: String, token: String) = blocking { this@suspending.release(name, token) }
    override suspend fun locked(name: String) = blocking { this@suspending.locked(name) }
    override suspend fun owned(name: String, token: String) = blocking { this@suspending.owned(name, token) }
    override fun toString() = this@suspending.toString()
}

internal fun BlockingLeaderElectionBackend.suspending() = object : LeaderElectionBackend {
    override suspend fun acquireOrRenew(name: String, token: String, duration: Duration, metadata: Map<String, String>) =
        blocking { this@suspending.acquireOrRenew(name, token, duration.toJava(), metadata) }
    override suspend fun release(name: String, token: String) = blocking { this@suspending.release(name, token) }
    override suspend fun get(name: String) = blocking { this@suspending.get(name) }
    override fun toString() = this@suspending.toString()
}

private suspend fun <T> blocking(call: () -> T): T = runInterruptible(Dispatchers.IO) { call() }

private fun Duration.toJava(): java.time.Duration = java.time.Duration.ofNanos(inWholeNanoseconds)

/**
 * The native layer's caller of a user's methods: one call per coroutine, cancelled when the
 * driver gives it up. What a method throws reaches the driver as its class name only (its
 * message could hold a token).
 */
internal class UserBackendCalls(
    private val locks: LockBackend?,
    private val elections: LeaderElectionBackend?,
    private val readWriteLocks: ReadWriteLockBackend?,
    private val semaphores: SemaphoreBackend?,
) : UserCalls {
    override suspend fun call(method: String, args: UserCallArgs): UserAnswer = try {
        answer(method, args)
    } catch (e: CancellationException) {
        throw e
    } catch (e: Exception) {
        throw UserCallException.Raised(e.javaClass.name)
    }

    private suspend fun answer(method: String, args: UserCallArgs): UserAnswer {
        val (name, token) = args.name to args.token.orEmpty()
        val lease by lazy { args.lease!!.toSeconds() }
        return when (method) {
            "acquire" -> UserAnswer.Fence(locks().acquire(name, token, args.lease!!.toSeconds()))
            "release" -> UserAnswer.Flag(locks().release(name, token))
            "locked" -> UserAnswer.Flag(locks().locked(name))
            "owned" -> UserAnswer.Flag(locks().owned(name, token))
            "acquire_or_renew" -> UserAnswer.Record(
                elections().acquireOrRenew(name, token, args.lease!!.toSeconds(), args.metadata.orEmpty()).raw(),
            )
            "leader_release" -> UserAnswer.Flag(elections().release(name, token))
            "get" -> UserAnswer.Record(elections().get(name)?.raw())
            "acquire_read" -> UserAnswer.Generation(rw().acquireRead(name, token, lease))
            "acquire_write" -> rw().acquireWrite(name, token, lease, args.intent ?: true)
                .let { UserAnswer.Write(it?.fencingToken, it?.poisoned ?: false) }
            "release_read" -> UserAnswer.Flag(rw().releaseRead(name, token))
            "release_write" -> UserAnswer.Flag(rw().releaseWrite(name, token))
            "cancel_intent" -> UserAnswer.Flag(rw().cancelIntent(name, token))
            "downgrade" -> UserAnswer.Generation(rw().downgrade(name, token, lease))
            "rw_state" -> rw().state(name).let {
                UserAnswer.RwState(it.generation, it.writing, it.readers.toLong(), it.waitingWriters.toLong())
            }
            "owned_read" -> UserAnswer.Flag(rw().ownedRead(name, token))
            "owned_write" -> UserAnswer.Flag(rw().ownedWrite(name, token))
            "sem_acquire" -> semaphores().acquire(name, token, lease, args.permits!!.toInt(), args.wait?.toSeconds())
                .let { UserAnswer.Permit(it.fencingToken, it.permits.toLong()) }
            "sem_release" -> UserAnswer.Flag(semaphores().release(name, token))
            "sem_owned" -> UserAnswer.Flag(semaphores().owned(name, token))
            "sem_state" -> semaphores().state(name).let {
                UserAnswer.SemState(it.permits.toLong(), it.holders.toLong(), it.waiting.toLong(), it.fence)
            }
            else -> error("the native library asked for $method, which this Kotlin layer does not know")
        }
    }

    // The native layer calls only what the store was made with.
    private fun locks() = checkNotNull(locks) { "no lock calls" }
    private fun elections() = checkNotNull(elections) { "no election calls" }
    private fun rw() = checkNotNull(readWriteLocks) { "no read-write lock calls" }
    private fun semaphores() = checkNotNull(semaphores) { "no semaphore calls" }
}

private fun LeaderRecord.raw() =
    FfiRecord(holder, leaseDuration.seconds(), acquiredAt, renewedAt, transitions.toULong(), metadata)

/** A store of your own from its calls of each kind; see [Store.custom]. */
internal fun customStore(
    locks: LockBackend?,
    elections: LeaderElectionBackend?,
    readWriteLocks: ReadWriteLockBackend?,
    semaphores: SemaphoreBackend?,
    scope: String?,
    label: String?,
): tenure.ffi.Store {
    val calls = UserBackendCalls(locks, elections, readWriteLocks, semaphores)
    val serves = CustomCalls(locks != null, elections != null, readWriteLocks != null, semaphores != null)
    return call { tenure.ffi.Store.custom(label ?: "UserBackend", calls, serves, scope) }
}
