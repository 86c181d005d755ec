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
    /** The kind of store: `memory`, `sqlite`, `redis`, `postgres` or `etcd`. */
    val kind: String get() = raw.kind()

    /** How far its locks exclude: `process` (memory), `host` (SQLite) or `cluster`. */
    val scope: String get() = raw.scope()

    /** Closes the store (SQLite first vacates expired leases); later calls on it fail. */
    suspend fun shutdown() = call { raw.shutdown() }

    /** Closes the store, blocking the calling thread: see [shutdown]. */
    override fun close() = call { raw.shutdownBlocking() }

    override fun toString() = "Store($kind)"

    companion object {
        init {
            Threads.ensure()
            TenureLogging.install()
        }

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
        )) {
            Native.setCallbackThreadInitializer(callback, daemon)
        }
    }

    /** Registers the initializer (once, on first use). */
    fun ensure() = Unit
}
