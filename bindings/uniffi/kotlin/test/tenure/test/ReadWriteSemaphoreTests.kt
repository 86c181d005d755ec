// Read-write locks and semaphores on every store, written the way Kotlin users write them.
package tenure.test

import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.async
import kotlinx.coroutines.coroutineScope
import tenure.LockOptions
import tenure.LockReentrantException
import tenure.LockUpgradeException
import tenure.ReadWriteLock
import tenure.ReadWriteLockState
import tenure.Semaphore
import tenure.Store
import tenure.SettingsValidationException
import tenure.WouldBlockException

private val quick = LockOptions(leaseDuration = 30.seconds, retryInterval = 20.milliseconds)

/** A read-write lock store written in Kotlin ([MapReadWrite]), beside the built-in stores. */
private val kotlinWritten by lazy { Store.custom(readWriteLocks = MapReadWrite(), label = "MapReadWrite") }

private suspend fun readWriteStore(kind: String) = if (kind == "kotlin-written") kotlinWritten else Stores.of(kind)

fun readWriteSemaphoreTests(suite: Suite) {
    for (kind in Stores.kinds + "kotlin-written") {
        suite.test("$kind: readers share a read-write lock; a waiting writer holds new readers back, then writes with a higher fence") {
            val doc = ReadWriteLock(Stores.fresh("rw"), readWriteStore(kind), quick)
            val first = doc.read.acquire()
            val second = doc.read.tryAcquire()
            assertEquals(2, doc.state().readers, "readers")
            assertThrows<WouldBlockException> { doc.write.tryAcquire() }
            coroutineScope {
                val writer = async { doc.write.withLock(timeout = 30.seconds) { token -> token } }
                eventually(what = "the writer to wait") { doc.state().waitingWriters == 1 }
                assertThrows<WouldBlockException> { doc.read.tryAcquire() }
                first.release()
                second.release()
                val token = writer.await()
                val next = doc.write.acquire()
                check(next.fencingToken > token) { "fence ${next.fencingToken} after $token" }
                check(!next.poisoned) { "a writer after a release is not poisoned" }
                val generation = next.downgrade()
                assertEquals(next.fencingToken, generation, "the generation read after the downgrade")
                doc.read.withLock { seen -> assertEquals(generation, seen, "a reader sees the last write") }
                next.release()
                assertEquals(ReadWriteLockState(generation, false, 0, 0), doc.state(), "state once everyone left")
            }
        }

        suite.test("$kind: the work of a side's withLock is one caller: asking to write while reading is an upgrade error") {
            val doc = ReadWriteLock(Stores.fresh("rw"), readWriteStore(kind), quick)
            doc.read.withLock { generation ->
                assertEquals(0L, generation, "a name never written")
                val e = assertThrows<LockUpgradeException> { doc.write.acquire(timeout = 2.seconds) }
                assertEquals(doc.name, e.lockName, "the lock named")
                assertThrows<LockReentrantException> { doc.read.tryAcquire() }
                assertEquals(0, doc.state().waitingWriters, "refused before asking the store")
                doc.read.acquireBlocking().close() // a blocking call is a caller of its own
            }
            doc.write.withLock { assertThrows<LockReentrantException> { doc.write.tryAcquire() } }
            doc.write.acquire().release()
        }

        if (kind == "kotlin-written") continue
        suite.test("$kind: a semaphore of two admits two fenced holders, and a third gets in when one leaves") {
            val exports = Semaphore(Stores.fresh("sem"), 2, Stores.of(kind), quick)
            assertEquals(2, exports.permits, "permits")
            val a = exports.acquire()
            val b = exports.acquire(timeout = 5.seconds)
            check(b.fencingToken > a.fencingToken) { "fence ${b.fencingToken} after ${a.fencingToken}" }
            check(exports.locked()) { "two of two permits taken, but not locked" }
            assertThrows<WouldBlockException> { exports.tryAcquire() }
            coroutineScope {
                val third = async { exports.withPermit(timeout = 30.seconds) { token -> token } }
                eventually(what = "the third to wait in line") { exports.state().waiting == 1 }
                a.release()
                check(third.await() > b.fencingToken) { "the third's fence" }
            }
            b.release()
            check(!exports.locked()) { "every permit released, but locked" }
        }
    }

    suite.test("memory: a semaphore of no permits is a settings error naming permits") {
        val e = assertThrows<SettingsValidationException> { Semaphore(Stores.fresh("sem"), 0, Stores.of("memory")) }
        assertEquals("permits", e.field, "field")
    }
}
