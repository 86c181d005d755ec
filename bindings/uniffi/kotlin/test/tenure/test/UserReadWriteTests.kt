// Read-write lock and semaphore stores written by users in Kotlin: plain classes with suspend
// methods (grelmicro 0.44's ReadWriteLockBackend calls, Tenure's semaphore calls), run by the
// driver like a built-in store.
package tenure.test

import java.time.Instant
import java.util.concurrent.atomic.AtomicInteger
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.toJavaDuration
import kotlin.time.toKotlinDuration
import kotlinx.coroutines.runBlocking
import tenure.BlockingReadWriteLockBackend
import tenure.WouldBlockException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import kotlinx.coroutines.withContext
import tenure.LockAcquireException
import tenure.LockOptions
import tenure.LockOwnedCheckException
import tenure.Permit
import tenure.ReadWriteLock
import tenure.ReadWriteLockBackend
import tenure.ReadWriteLockState
import tenure.Semaphore
import tenure.SemaphoreBackend
import tenure.SemaphoreState
import tenure.Store
import tenure.StoreException
import tenure.WriteGrant

private fun until(duration: Duration): Instant = Instant.now().plus(duration.toJavaDuration())

/** grelmicro 0.44's memory read-write lock, as a Kotlin user would port it: reaped before every call. */
class MapReadWrite : ReadWriteLockBackend {
    private class Entry {
        var generation = 0L
        var writer: String? = null
        var until: Instant = Instant.EPOCH
        var expired = false
        val readers = mutableMapOf<String, Instant>()
        val intents = mutableMapOf<String, Instant>()
    }

    private val mutex = Mutex()
    private val entries = mutableMapOf<String, Entry>()

    private fun reap(name: String): Entry {
        val entry = entries.getOrPut(name) { Entry() }
        val now = Instant.now()
        entry.readers.values.removeIf { it.isBefore(now) }
        entry.intents.values.removeIf { it.isBefore(now) }
        if (entry.writer != null && entry.until.isBefore(now)) {
            entry.writer = null
            entry.expired = true
        }
        return entry
    }

    override suspend fun acquireRead(name: String, token: String, duration: Duration): Long? = mutex.withLock {
        val e = reap(name)
        if (token !in e.readers && (e.writer != null || e.intents.isNotEmpty())) return null
        e.readers[token] = until(duration)
        e.generation
    }

    override suspend fun acquireWrite(name: String, token: String, duration: Duration, intent: Boolean): WriteGrant? = mutex.withLock {
        val e = reap(name)
        if (e.writer == token) {
            e.until = until(duration)
            return WriteGrant(e.generation, false)
        }
        if (e.writer != null || e.readers.isNotEmpty()) {
            if (intent) e.intents[token] = until(duration)
            return null
        }
        e.intents.remove(token)
        val poisoned = e.expired
        e.expired = false
        e.generation += 1
        e.writer = token
        e.until = until(duration)
        WriteGrant(e.generation, poisoned)
    }

    override suspend fun releaseRead(name: String, token: String) = mutex.withLock { reap(name).readers.remove(token) != null }

    override suspend fun releaseWrite(name: String, token: String) = mutex.withLock {
        val e = reap(name)
        (e.writer == token).also { if (it) e.writer = null }
    }

    override suspend fun cancelIntent(name: String, token: String) = mutex.withLock { reap(name).intents.remove(token) != null }

    override suspend fun downgrade(name: String, token: String, duration: Duration): Long? = mutex.withLock {
        val e = reap(name)
        if (e.writer != token) return null
        e.writer = null
        e.readers[token] = until(duration)
        e.generation
    }

    override suspend fun state(name: String) = mutex.withLock {
        val e = reap(name)
        ReadWriteLockState(e.generation, e.writer != null, e.readers.size, e.intents.size)
    }

    override suspend fun ownedRead(name: String, token: String) = mutex.withLock { token in reap(name).readers }

    override suspend fun ownedWrite(name: String, token: String) = mutex.withLock { reap(name).writer == token }
}

/** Permits with leases and fencing tokens in maps; no line (`wait` is ignored). */
class MapSemaphore : SemaphoreBackend {
    private class Held(val until: Instant, val fence: Long)

    private val mutex = Mutex()
    private val holders = mutableMapOf<String, MutableMap<String, Held>>()
    private val counts = mutableMapOf<String, Int>()
    private val fences = mutableMapOf<String, Long>()
    val mostAtOnce = AtomicInteger()

    private fun live(name: String): MutableMap<String, Held> {
        val live = holders.getOrPut(name) { mutableMapOf() }
        live.values.removeIf { it.until.isBefore(Instant.now()) }
        if (live.isEmpty()) counts.remove(name)
        return live
    }

    override suspend fun acquire(name: String, token: String, duration: Duration, permits: Int, wait: Duration?): Permit = mutex.withLock {
        val live = live(name)
        val count = counts.getOrPut(name) { permits }
        if (count != permits) return Permit(null, count)
        val held = live[token]
        if (held == null && live.size >= count) return Permit(null, count)
        val fence = held?.fence ?: ((fences[name] ?: 0) + 1).also { fences[name] = it }
        live[token] = Held(until(duration), fence)
        mostAtOnce.accumulateAndGet(live.size, ::maxOf)
        Permit(fence, count)
    }

    override suspend fun release(name: String, token: String) = mutex.withLock { live(name).remove(token) != null }

    override suspend fun owned(name: String, token: String) = mutex.withLock { token in live(name) }

    override suspend fun state(name: String) = mutex.withLock {
        val live = live(name)
        SemaphoreState(counts[name] ?: 0, live.size, 0, fences[name] ?: 0)
    }
}

/** A read-write store whose reads answer a generation below zero, and its state a count below zero. */
private class NegativeGenerations(private val inner: ReadWriteLockBackend) : ReadWriteLockBackend by inner {
    override suspend fun acquireRead(name: String, token: String, duration: Duration): Long? = -1
    override suspend fun state(name: String) = ReadWriteLockState(0, false, -2, 0)
}

/** [MapReadWrite]'s calls as a Java user's blocking methods. */
private class BlockingMapReadWrite(private val inner: MapReadWrite = MapReadWrite()) : BlockingReadWriteLockBackend {
    private fun <T> wait(call: suspend MapReadWrite.() -> T): T = runBlocking { inner.call() }
    override fun acquireRead(name: String, token: String, duration: java.time.Duration) = wait { acquireRead(name, token, duration.toKotlinDuration()) }
    override fun acquireWrite(name: String, token: String, duration: java.time.Duration, intent: Boolean) =
        wait { acquireWrite(name, token, duration.toKotlinDuration(), intent) }
    override fun releaseRead(name: String, token: String) = wait { releaseRead(name, token) }
    override fun releaseWrite(name: String, token: String) = wait { releaseWrite(name, token) }
    override fun cancelIntent(name: String, token: String) = wait { cancelIntent(name, token) }
    override fun downgrade(name: String, token: String, duration: java.time.Duration) = wait { downgrade(name, token, duration.toKotlinDuration()) }
    override fun state(name: String) = wait { state(name) }
    override fun ownedRead(name: String, token: String) = wait { ownedRead(name, token) }
    override fun ownedWrite(name: String, token: String) = wait { ownedWrite(name, token) }
}

fun userReadWriteTests(suite: Suite) {
    val quick = LockOptions(retryInterval = 5.milliseconds)

    suite.test("user backend: a semaphore on a store written in Kotlin admits its permits, each fenced") {
        val backend = MapSemaphore()
        val store = Store.custom(semaphores = backend)
        val pool = Semaphore("pool", 2, store, quick)
        val fences = java.util.Collections.synchronizedList(mutableListOf<Long>())
        withContext(Dispatchers.Default) {
            List(5) { async { pool.withPermit(timeout = 30.seconds) { token -> fences += token } } }.awaitAll()
        }
        assertEquals((1L..5L).toList(), fences.sorted(), "each permit its own fencing token")
        assertEquals(2, backend.mostAtOnce.get(), "at most two at once")
        assertEquals(SemaphoreState(0, 0, 0, 5), pool.state(), "nobody holds")
    }

    suite.test("user backend: a blocking Java read-write store serves readers and a downgrading writer") {
        val doc = ReadWriteLock("doc", Store.customBlocking(readWriteLocks = BlockingMapReadWrite()), quick)
        doc.read.acquireBlocking().use { reader ->
            assertEquals(0L, reader.fencingToken, "the generation of a name never written")
            assertThrows<WouldBlockException> { doc.write.tryAcquireBlocking() }
        }
        val writer = doc.write.acquireBlocking()
        assertEquals(1L, writer.fencingToken, "the first write")
        assertEquals(1L, writer.downgradeBlocking(), "the generation read after the downgrade")
        assertEquals(ReadWriteLockState(1, false, 1, 0), doc.stateBlocking(), "one reader, downgraded")
        writer.close()
    }

    suite.test("user backend: a negative generation from a store written in Kotlin fails the acquire, naming the call") {
        val store = Store.custom(readWriteLocks = NegativeGenerations(MapReadWrite()), label = "Negative")
        val e = assertThrows<LockAcquireException> { ReadWriteLock("doc", store, quick).read.tryAcquire() }
        val cause = e.cause as? StoreException ?: throw AssertionFailed("no store failure behind ${e.message}")
        check("acquireRead answered a negative generation" in cause.message.orEmpty()) { cause.message.orEmpty() }
        check("Negative.acquireRead" in cause.message.orEmpty()) { "the store is named: ${cause.message}" }
        val state = assertThrows<LockOwnedCheckException> { ReadWriteLock("doc", store, quick).state() }
        val why = (state.cause as? StoreException)?.message.orEmpty()
        check("Negative.state answered a negative count in a state" in why) { why }
    }
}
