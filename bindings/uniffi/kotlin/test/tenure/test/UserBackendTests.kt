// Stores written in Kotlin and Java (Store.custom, Store.customBlocking): the lock calls and the
// election calls of a backend kept in this process's memory, used the way users use a store, and
// the driver's checks of what such a backend answers: a fencing token out of range or going back,
// a method that throws (its message never shown), a call that answers past backendTimeout (the
// acquire fails, the late grant is given back), a missing kind of calls.
package tenure.test

import java.time.Instant
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.toJavaDuration
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.withContext
import tenure.BlockingLockBackend
import tenure.CoordinationBackendException
import tenure.ElectionOptions
import tenure.LeaderElection
import tenure.LeaderElectionBackend
import tenure.LeaderRecord
import tenure.Lock
import tenure.LockAcquireException
import tenure.LockBackend
import tenure.LockOptions
import tenure.LockTimeoutException
import tenure.SettingsValidationException
import tenure.Store
import tenure.StoreException

/** Locks and elections kept in a map, as a user would write them over a table of their own. */
class MapBackend : LockBackend, LeaderElectionBackend {
    private class Lease(val token: String, val until: Instant)

    private val mutex = Mutex()
    private val locks = mutableMapOf<String, Lease>()
    private val fences = mutableMapOf<String, Long>()
    private val leaders = mutableMapOf<String, LeaderRecord>()
    val calls = AtomicInteger()
    /** How many times `acquire` took a free lock. */
    val granted = AtomicInteger()

    private fun live(name: String): Lease? = locks[name]?.takeIf { it.until.isAfter(Instant.now()) }

    override suspend fun acquire(name: String, token: String, duration: Duration): Long? = mutex.withLock {
        calls.incrementAndGet()
        val held = live(name)
        if (held != null && held.token != token) return null
        locks[name] = Lease(token, Instant.now().plus(duration.toJavaDuration()))
        if (held == null) {
            fences[name] = (fences[name] ?: 0) + 1
            granted.incrementAndGet()
        }
        fences.getValue(name)
    }

    /** Both interfaces' `release`: names carry their kind (`lock:orders`, `leader:scheduler`). */
    override suspend fun release(name: String, token: String): Boolean = mutex.withLock {
        when {
            live(name)?.token == token -> locks.remove(name) != null
            leaders[name]?.holder == token -> leaders.remove(name) != null
            else -> false
        }
    }

    override suspend fun locked(name: String): Boolean = mutex.withLock { live(name) != null }

    override suspend fun owned(name: String, token: String): Boolean = mutex.withLock { live(name)?.token == token }

    override suspend fun acquireOrRenew(name: String, token: String, duration: Duration, metadata: Map<String, String>): LeaderRecord =
        mutex.withLock {
            val now = Instant.now()
            val current = leaders[name]?.takeIf { it.renewedAt.plus(it.leaseDuration.toJavaDuration()).isAfter(now) }
            when {
                current != null && current.holder != token -> current
                current != null -> current.copy(renewedAt = now, leaseDuration = duration, metadata = metadata)
                else -> LeaderRecord(token, duration, now, now, (leaders[name]?.transitions ?: 0) + 1, metadata)
            }.also { leaders[name] = it }
        }

    override suspend fun get(name: String): LeaderRecord? = mutex.withLock {
        leaders[name]?.takeIf { it.renewedAt.plus(it.leaseDuration.toJavaDuration()).isAfter(Instant.now()) }
    }
}

/** A lock backend whose `acquire` answers what [fences] gives, whatever is asked. */
private class Answering(private val fences: () -> Long?) : LockBackend {
    override suspend fun acquire(name: String, token: String, duration: Duration) = fences()
    override suspend fun release(name: String, token: String) = true
    override suspend fun locked(name: String) = false
    override suspend fun owned(name: String, token: String) = true
}

/** The store's failure behind the lock operation [block] fails with. */
private fun failure(block: () -> Unit): StoreException {
    val e = assertThrows<LockAcquireException> { block() }
    return e.cause as? StoreException ?: throw AssertionFailed("no store failure behind ${e.message}")
}

fun userBackendTests(suite: Suite) {
    suite.test("user backend: a lock on a store written in Kotlin excludes and fences, as a built-in one") {
        val backend = MapBackend()
        val store = Store.custom(locks = backend, scope = "process")
        assertEquals("user", store.kind, "kind")
        assertEquals("process", store.scope, "the declared scope")
        val lock = Lock("orders", store, LockOptions(retryInterval = 5.milliseconds))
        val inside = AtomicInteger()
        val fences = java.util.Collections.synchronizedList(mutableListOf<Long>())
        withContext(Dispatchers.Default) {
            List(4) {
                async {
                    repeat(3) {
                        lock.withLock { token ->
                            check(inside.incrementAndGet() == 1) { "two coroutines held the lock at once" }
                            fences += token
                            inside.decrementAndGet()
                        }
                    }
                }
            }.awaitAll()
        }
        checkIncreasing(fences)
        assertEquals(12, fences.size, "holds")
        val held = lock.acquire()
        assertThrows<LockTimeoutException> { Lock("orders", store).acquireBlocking(timeout = 50.milliseconds.toJavaDuration()) }
        held.release()
        check(!lock.locked()) { "released, but locked" }
        check(backend.calls.get() >= 13) { "the backend was called ${backend.calls.get()} times" }
    }

    suite.test("user backend: an election on a store written in Kotlin elects one leader at a time") {
        val store = Store.custom(elections = MapBackend())
        val options = ElectionOptions(
            leaseDuration = 2.seconds, renewDeadline = 1.seconds, retryInterval = 50.milliseconds, backendTimeout = 500.milliseconds,
        )
        LeaderElection("scheduler", store, options.copy(worker = "a", metadata = mapOf("pod" to "a"))).use { a ->
            LeaderElection("scheduler", store, options.copy(worker = "b")).use { b ->
                a.start()
                eventually(what = "a leads") { a.isLeader }
                b.start()
                eventually(what = "b sees a's record") { b.record?.holder == "a" }
                check(!b.isLeader) { "two leaders" }
                assertEquals(mapOf("pod" to "a"), b.record?.metadata, "the leader's metadata")
                a.close()
                eventually(what = "b takes over") { b.isLeader }
            }
        }
    }

    suite.test("user backend: a fencing token out of range, or lower than one answered before, fails the acquire") {
        for ((answers, what) in listOf(listOf(0L) to "fencing token 0", listOf(-3L) to "negative fencing token", listOf(9L, 4L) to "answered fencing token 4 after 9")) {
            val queue = ArrayDeque(answers)
            val store = Store.custom(locks = Answering { queue.removeFirstOrNull() ?: answers.last() }, label = "Shaky")
            val lock = Lock("orders", store)
            if (answers.size == 2) lock.acquire().release()
            val e = failure { lock.acquireBlocking() }
            check(what in e.message.orEmpty()) { "for $answers: ${e.message}" }
        }
    }

    suite.test("user backend: a method that throws fails the operation naming the backend, never the exception's message") {
        val store = Store.custom(locks = object : LockBackend by MapBackend() {
            override suspend fun acquire(name: String, token: String, duration: Duration): Long? =
                throw IllegalStateException("connection refused for token $token")
        }, label = "Flaky")
        val e = assertThrows<LockAcquireException> { Lock("orders", store).acquireBlocking() }
        val message = "${e.message} / ${e.cause?.message}"
        check("Flaky.acquire raised java.lang.IllegalStateException" in message) { message }
        check("connection refused" !in message && ":task:" !in message) { "the exception's message is shown: $message" }
    }

    suite.test("user backend: a call that answers after backendTimeout fails the acquire, and its late grant is given back") {
        val backend = MapBackend()
        val store = Store.custom(locks = object : LockBackend by backend {
            override suspend fun acquire(name: String, token: String, duration: Duration): Long? {
                delay(1.seconds)
                return backend.acquire(name, token, duration)
            }
        })
        val lock = Lock("orders", store, LockOptions(backendTimeout = 200.milliseconds))
        assertEquals("STORE_TIMEOUT", failure { lock.acquireBlocking() }.code, "code")
        eventually(what = "the late grant is given back") { backend.granted.get() == 1 && !backend.locked("lock:orders") }
    }

    suite.test("user backend: a blocking Java backend's calls run on the IO threads, and a late grant is given back") {
        val backend = MapBackend()
        // Eight calls that each block until all eight are inside: only the IO dispatcher (64
        // threads) holds them at once; the default one has as many threads as cores.
        val together = java.util.concurrent.CountDownLatch(8)
        val store = Store.customBlocking(locks = object : BlockingLockBackend {
            private fun <T> on(call: suspend () -> T): T = kotlinx.coroutines.runBlocking { call() }
            override fun acquire(name: String, token: String, duration: java.time.Duration): Long? {
                if (name.endsWith("slow")) Thread.sleep(1_000)
                if (name.contains("together")) {
                    together.countDown()
                    check(together.await(20, java.util.concurrent.TimeUnit.SECONDS)) { "the calls did not run at once" }
                }
                return on { backend.acquire(name, token, duration.toMillis().milliseconds) }
            }
            override fun release(name: String, token: String) = on { backend.release(name, token) }
            override fun locked(name: String) = on { backend.locked(name) }
            override fun owned(name: String, token: String) = on { backend.owned(name, token) }
        })
        val guard = Lock("report", store).acquire()
        assertEquals(1L, guard.fencingToken, "the first fence")
        guard.release()
        val fences = withContext(Dispatchers.Default) {
            List(8) { i ->
                async { Lock("together-$i", store, LockOptions(backendTimeout = 30.seconds)).withLock { token -> token } }
            }.awaitAll()
        }
        assertEquals(List(8) { 1L }, fences, "eight calls blocked at once, each granted")
        val slow = Lock("report-slow", store, LockOptions(backendTimeout = 200.milliseconds))
        assertEquals("STORE_TIMEOUT", failure { slow.acquireBlocking() }.code, "code")
        eventually(what = "the late grant is given back") { backend.granted.get() == 10 && !backend.locked("lock:report-slow") }
    }

    suite.test("user backend: a store without lock or election calls says which is missing") {
        val locksOnly = Store.custom(locks = MapBackend())
        assertThrows<CoordinationBackendException> { LeaderElection("scheduler", locksOnly) }
        val e = assertThrows<SettingsValidationException> { Store.custom() }
        check("neither lock calls nor election calls" in e.message.orEmpty()) { e.message.orEmpty() }
        val scope = assertThrows<SettingsValidationException> { Store.custom(locks = MapBackend(), scope = "galaxy") }
        assertEquals("scope", scope.field, "field")
    }
}
