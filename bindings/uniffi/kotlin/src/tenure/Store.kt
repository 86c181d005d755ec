package tenure

import com.sun.jna.CallbackThreadInitializer
import com.sun.jna.Native
import tenure.ffi.Store as Ffi

/**
 * An open store: `memory:`, `sqlite:///path.db`, `redis://…`, `postgresql://…`, `etcd://…`.
 * Locks, task locks and elections made on it share its connection (or file, or memory).
 * [close] closes it for all of them.
 *
 * ```
 * Store.open("redis://127.0.0.1:6379").use { store ->
 *     Lock("orders", store).withLock { token -> write(token) }
 * }
 * ```
 */
class Store private constructor(internal val raw: Ffi) : AutoCloseable {
    /** The kind of store: `memory`, `sqlite`, `redis`, `postgres`, `etcd`, or `user` ([custom]). */
    val kind: String get() = raw.kind()

    /**
     * How far its locks exclude: `process` (memory), `host` (SQLite) or `cluster`; for a store of
     * your own ([custom]), the scope it declares, or `null`.
     */
    val scope: String? get() = raw.scope()

    /** Closes the store (SQLite first vacates expired leases); later calls on it fail. A store of your own is yours to close. */
    suspend fun shutdown() = call { raw.shutdown() }

    /** Closes the store, blocking the calling thread: see [shutdown]. */
    override fun close() = call { raw.shutdownBlocking() }

    override fun toString() = "Store($kind)"

    companion object {
        init {
            Threads.ensure()
            TenureLogging.install()
        }

        /**
         * A store you write: its [locks] calls serve locks and task locks, its [elections] calls
         * serve leader elections, its [readWriteLocks] calls read-write locks and its [semaphores]
         * calls semaphores (give any of them). Tenure calls it as it calls its own stores:
         * a call that has not answered within the lock's or election's `backendTimeout` fails the
         * operation, and what it answers later is settled (a late grant given back; a coroutine
         * still running a minute later is cancelled); an answer of the wrong shape or range (a
         * fencing token that is not positive, or lower than one it answered before for the name)
         * fails the operation with a [StoreException] as its cause, and so does a method that
         * throws (the message names the backend, the method and the exception's class, never its
         * message). [scope] declares
         * how far its locks exclude (`process`, `host` or `cluster`); [label] names it in messages
         * (its class name by default).
         *
         * ```
         * val store = Store.custom(locks = MyLocks(dataSource))
         * Lock("nightly-export", store).withLock { token -> export(token) }
         * ```
         */
        @JvmStatic
        @JvmOverloads
        fun custom(
            locks: LockBackend? = null,
            elections: LeaderElectionBackend? = null,
            scope: String? = null,
            label: String? = null,
            readWriteLocks: ReadWriteLockBackend? = null,
            semaphores: SemaphoreBackend? = null,
        ): Store = Store(
            customStore(locks, elections, readWriteLocks, semaphores, scope, label ?: nameOf(locks ?: elections ?: readWriteLocks ?: semaphores)),
        )

        /** [custom] for Java: a store whose calls are plain blocking methods, run on `Dispatchers.IO`. */
        @JvmStatic
        @JvmOverloads
        fun customBlocking(
            locks: BlockingLockBackend? = null,
            elections: BlockingLeaderElectionBackend? = null,
            scope: String? = null,
            label: String? = null,
            readWriteLocks: BlockingReadWriteLockBackend? = null,
            semaphores: BlockingSemaphoreBackend? = null,
        ): Store = Store(
            customStore(
                locks?.suspending(),
                elections?.suspending(),
                readWriteLocks?.suspending(),
                semaphores?.suspending(),
                scope,
                label ?: nameOf(locks ?: elections ?: readWriteLocks ?: semaphores),
            ),
        )

        internal fun of(raw: Ffi) = Store(raw)

        private fun nameOf(backend: Any?) = backend?.let { it::class.simpleName }

        /** A store in this process's memory: its locks exclude within the process only. */
        @JvmStatic
        fun memory(): Store = Store(Ffi.memory())

        /**
         * Opens the store [url] names. A bad URL is a [SettingsValidationException] naming the part that
         * is wrong (never showing a password); an unreachable store a [StoreException].
         */
        suspend fun open(url: String): Store = Store(call { Ffi.open(url) })

        /** [open], blocking the calling thread (for Java). */
        @JvmStatic
        fun openBlocking(url: String): Store = Store(call { Ffi.openBlocking(url) })

        /**
         * Opens the store grelmicro's environment variables describe for [kind] (`redis`: `REDIS_URL`
         * xor `REDIS_HOST` + `REDIS_PORT`, `REDIS_DB`, `REDIS_PASSWORD`; `postgres`: `POSTGRES_URL` xor
         * `POSTGRES_HOST` + …; `sqlite`: `SQLITE_PATH`; `etcd`: `ETCD_URL` xor `ETCD_HOST` + …), with
         * another [prefix] if given.
         */
        suspend fun fromEnv(kind: String, prefix: String? = null): Store = Store(call { Ffi.fromEnv(kind, prefix) })

        /** [fromEnv], blocking the calling thread (for Java). */
        @JvmStatic
        @JvmOverloads
        fun fromEnvBlocking(kind: String, prefix: String? = null): Store =
            Store(call { Ffi.fromEnvBlocking(kind, prefix) })
    }
}

/**
 * The native threads that call into the JVM (waking a suspended call, telling a leadership
 * listener) stay attached as daemon threads: attaching once is cheap where attaching per call is
 * not, and a daemon never keeps a JVM from exiting.
 */
internal object Threads {
    init {
        val daemon = CallbackThreadInitializer(true, false, "tenure-native")
        for (callback in listOf(
            tenure.ffi.uniffiRustFutureContinuationCallbackImpl,
            tenure.ffi.uniffiCallbackInterfaceLeadershipListener.onChange,
            tenure.ffi.uniffiCallbackInterfaceLeadershipListener.uniffiFree,
            tenure.ffi.uniffiCallbackInterfaceLogSink.record,
            tenure.ffi.uniffiCallbackInterfaceLogSink.uniffiFree,
            tenure.ffi.uniffiCallbackInterfaceUserCalls.call,
            tenure.ffi.uniffiCallbackInterfaceUserCalls.uniffiFree,
            tenure.ffi.uniffiCallbackInterfaceUserCalls.uniffiClone,
            tenure.ffi.uniffiForeignFutureDroppedCallbackImpl,
        )) {
            Native.setCallbackThreadInitializer(callback, daemon)
        }
    }

    /** Registers the initializer (once, on first use). */
    fun ensure() = Unit
}
