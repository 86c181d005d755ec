// The first lines users of the anchor libraries write today, as they write them against Tenure:
// a kotlinx.coroutines Mutex user's `withLock { }`, a Redisson user's lock/try/finally/unlock and
// FencedLock token, a ShedLock user's job that runs once per window, a Curator user's leader
// latch. Each is the README's Kotlin quick start in small.
package tenure.test

import kotlin.time.Duration.Companion.minutes
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.withContext
import tenure.LeaderElection
import tenure.Lock
import tenure.LockOptions
import tenure.Store
import tenure.TaskLock
import tenure.TaskLockOptions

fun firstLinesTests(suite: Suite) {
    suite.test("first lines: a kotlinx Mutex user's withLock { } on Redis") {
        Store.open("${Stores.redisUrl}/?prefix=${Stores.fresh("tenure-kotlin")}:").use { store ->
            val mutex = Lock("counter", store)
            var counter = 0
            withContext(Dispatchers.Default) {
                List(20) { async { mutex.withLock { counter++ } } }.awaitAll()
            }
            assertEquals(20, counter, "increments under the lock")
        }
    }

    suite.test("first lines: a Redisson user's lock, try, finally unlock, and a FencedLock token") {
        val store = Stores.of("redis")
        val lock = Lock("myLock", store, LockOptions(leaseDuration = 10.seconds))
        val guard = lock.acquireBlocking()
        val token: Long
        try {
            token = guard.fencingToken // Redisson: lock.lockAndGetToken()
            check(token > 0) { "fence $token" }
        } finally {
            guard.releaseBlocking() // Redisson: lock.unlock()
        }
        check(!lock.lockedBlocking()) { "unlocked, but taken" }
        val next = lock.tryAcquireBlocking() // Redisson: lock.tryLock()
        check(next.fencingToken > token) { "the next token is not higher" }
        next.close()
    }

    suite.test("first lines: a ShedLock user's nightly job runs once per window across replicas") {
        val store = Stores.of("postgres")
        val ran = (1..3).map {
            // ShedLock: @SchedulerLock(name = "nightly-report", lockAtMostFor = "10m", lockAtLeastFor = "1m")
            val report = TaskLock("nightly-report", store, TaskLockOptions(leaseDuration = 10.minutes, minHoldDuration = 1.minutes))
            report.runOnce { "report built" }
        }
        assertEquals(listOf("report built", null, null), ran, "runs")
    }

    suite.test("first lines: a Curator user's leader latch, with a listener") {
        val store = Stores.of("sqlite")
        LeaderElection("scheduler", store, fastElection("sqlite")).use { election ->
            val heard = kotlinx.coroutines.CompletableDeferred<Boolean>()
            election.start { leading -> heard.complete(leading) } // Curator: latch.addListener(…); latch.start()
            election.waitForLeader() // Curator: latch.await()
            check(heard.await()) { "the listener heard no lead" }
            assertEquals("work done", election.lead { "work done" }, "lead's value")
        }
    }
}
