// Locks on every store, written the way Kotlin users write them.
package tenure.test

import java.util.Collections
import java.util.concurrent.atomic.AtomicInteger
import kotlin.concurrent.thread
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.yield
import tenure.KeepAliveStop
import tenure.Lock
import tenure.LockLostException
import tenure.LockNotOwnedException
import tenure.LockOptions
import tenure.ElectionOptions
import tenure.LeaderElection
import tenure.LockState
import tenure.ReadWriteLock
import tenure.Semaphore
import tenure.SettingsValidationException
import tenure.TaskLock
import tenure.TaskLockOptions
import tenure.LockTimeoutException
import tenure.Store
import tenure.TenureException
import tenure.WouldBlockException

/** Time for a lease of [lease] to have ended in a store of [kind]: etcd keeps leases in whole seconds, at least 2 s. */
fun outlast(kind: String, lease: Duration): Duration = if (kind == "etcd") maxOf(lease, 2.seconds) + 1.seconds else lease

/** A lease short enough to outlive a few times in a test, long enough for the store's granularity. */
fun shortLease(kind: String): Duration = if (kind == "etcd") 2.seconds else 400.milliseconds

fun lockTests(suite: Suite) {
    suite.test("redis: a lock revoked by an operator (tenure revoke) cancels withLock with LockLostException, reason revoked") {
        val cli = System.getenv("TENURE_CLI") ?: error("set TENURE_CLI to the tenure command (scripts/test.sh kotlin does)")
        val url = Stores.url("redis")
        val store = Store.open(url)
        try {
            val lock = Lock("report", store, LockOptions(leaseDuration = 3.seconds))
            var cancelled = false
            val e = assertThrows<LockLostException> {
                lock.withLock { token ->
                    val revoke = ProcessBuilder(cli, "--backend", url, "revoke", "report", "--reason", "stuck on a deploy")
                        .redirectErrorStream(true)
                        .start()
                    val said = revoke.inputStream.bufferedReader().readText()
                    check(revoke.waitFor() == 0) { said }
                    check("(fence $token); the fence is now ${token + 1}" in said) { said }
                    try {
                        delay(60_000)
                    } finally {
                        cancelled = true
                    }
                }
            }
            check(cancelled) { "the block ran on after the revocation" }
            assertEquals("revoked", e.reason, "why")
            check("stuck on a deploy" in (e.message ?: "")) { "the operator's reason: ${e.message}" }
            check(lock.locked()) { "the placeholder holds it until the revoked lease would have ended" }
        } finally {
            store.close()
        }
    }

    suite.test("redis: a read-write lock's writer, a semaphore's permit holder and a leader name their purpose to tenure locks") {
        val cli = System.getenv("TENURE_CLI") ?: error("set TENURE_CLI to the tenure command (scripts/test.sh kotlin does)")
        val url = Stores.url("redis")
        val store = Store.open(url)
        try {
            val (catalogName, exportsName) = Pair(Stores.fresh("catalog"), Stores.fresh("exports"))
            val catalog = ReadWriteLock(catalogName, store, LockOptions(purpose = "rebuild"))
            val exports = Semaphore(exportsName, 2, store, LockOptions(purpose = "export"))
            val electionName = Stores.fresh("scheduler")
            val election = LeaderElection(electionName, store, ElectionOptions(worker = "s1", purpose = "schedule"))
            election.start()
            election.waitForLeader()
            val listed = catalog.write.withLock {
                exports.withPermit {
                    val locks = ProcessBuilder(cli, "--backend", url, "locks", "--json").redirectErrorStream(true).start()
                    val said = locks.inputStream.bufferedReader().readText()
                    check(locks.waitFor() == 0) { said }
                    said
                }
            }
            election.stop()
            val pid = ProcessHandle.current().pid()
            // (an election's keys are in order: elections, then its leader's details, its name)
            val told = Regex("\"leader\":\"s1\",\"leader_details\":\\{([^{}]*)\\},\"name\":\"$electionName\"").find(listed)
            val leader = told?.groupValues?.get(1) ?: error("$electionName not listed with its leader's details: $listed")
            check("\"purpose\":\"schedule\"" in leader && "\"pid\":$pid," in leader) { leader }
            for ((name, side, purpose) in listOf(Triple(catalogName, "write", "rebuild"), Triple(exportsName, "permit", "export"))) {
                // (one holder each; the listing's keys are in order: holders, then kind, line, name)
                val entry = Regex("\"holders\":\\[\\{([^{}]*)\\}\\],[^{}]*?\"name\":\"$name\"").find(listed)
                val holder = entry?.groupValues?.get(1) ?: error("$name not listed with one holder: $listed")
                for (told in listOf("\"side\":\"$side\"", "\"pid\":$pid,", "\"purpose\":\"$purpose\"")) {
                    check(told in holder) { "$name's holder does not tell $told: $holder" }
                }
            }
        } finally {
            store.close()
        }
    }

    for (kind in Stores.kinds) {
        suite.test("$kind: state() names the holder, its process and its purpose; never the token") {
            val name = Stores.fresh("state")
            val lock = Lock(name, Stores.of(kind), LockOptions(worker = "batch-1", purpose = "nightly export"))
            val watcher = Lock(name, Stores.of(kind))
            assertEquals(LockState(name, false, null, null, null, null), watcher.state(), "free")
            lock.withLock { token ->
                val state = watcher.stateBlocking()
                assertEquals(Triple(true, "batch-1", token), Triple(state.held, state.worker, state.fencingToken), "held")
                val holder = state.holder ?: error("no holder details: $state")
                assertEquals(ProcessHandle.current().pid().toInt(), holder.pid, "pid")
                assertEquals("nightly export", holder.purpose, "purpose")
                check(holder.program.startsWith("java")) { holder.program }
                check(java.time.Duration.between(holder.acquiredAt, java.time.Instant.now()).abs().seconds < 60) { "$holder" }
                check(state.expiresAt!! > holder.acquiredAt) { "$state" }
                check(":task:" !in state.toString() && ":thread:" !in state.toString()) { "a token shown: $state" }
            }
            val free = watcher.state()
            check(!free.held && free.holder == null) { "$free" }
            val task = TaskLock(Stores.fresh("state-task"), Stores.of(kind), TaskLockOptions(minHoldDuration = 10.milliseconds, purpose = "weekly"))
            val run = task.enter()
            assertEquals("weekly", task.state().holder?.purpose, "the run's purpose")
            run.exit()
            assertThrows<SettingsValidationException> { Lock(name, Stores.of(kind), LockOptions(purpose = "a\nb")) }
            assertThrows<SettingsValidationException> { Semaphore(name, 2, Stores.of(kind), LockOptions(purpose = "a\nb")) }
            assertThrows<SettingsValidationException> {
                ReadWriteLock(name, Stores.of(kind), LockOptions(purpose = "p".repeat(10_000)))
            }
        }

        suite.test("$kind: state() lists who waits, first in line first (null where the store keeps no line)") {
            val name = Stores.fresh("line")
            val holder = Lock(name, Stores.of(kind), LockOptions(worker = "batch-1"))
            val first = Lock(name, Stores.of(kind), LockOptions(worker = "batch-2", purpose = "retry export"))
            val second = Lock(name, Stores.of(kind), LockOptions(worker = "batch-3"))
            val guard = holder.acquire()
            coroutineScope {
                val waiters = mutableListOf(async { first.acquire() })
                if (kind == "sqlite" || kind == "etcd" || kind == "memory") {
                    delay(300)
                    assertEquals(null, holder.state().waiting, "no line on $kind")
                } else {
                    eventually(what = "the first waiter in line") { holder.state().waiting.orEmpty().size == 1 }
                    waiters += async { second.acquire() }
                    eventually(what = "both waiters in line") { holder.state().waiting.orEmpty().size == 2 }
                    val line = holder.state().waiting!!
                    assertEquals(listOf("batch-2", "batch-3"), line.map { it.worker }, "the line")
                    assertEquals("retry export", line[0].details?.purpose, "the first waiter's purpose")
                    assertEquals(ProcessHandle.current().pid().toInt(), line[0].details?.pid, "its pid")
                    check(line[0].since!! <= line[1].since!!) { "$line" }
                }
                guard.release()
                for (waiter in waiters) waiter.await().release()
            }
        }

        suite.test("$kind: a lock cycle gives strictly increasing fencing tokens") {
            val lock = Lock(Stores.fresh("cycle"), Stores.of(kind), LockOptions(leaseDuration = 5.seconds))
            val fences = mutableListOf<Long>()
            repeat(3) {
                val guard = lock.acquire(timeout = 5.seconds)
                check(guard.isValid) { "a fresh guard is not valid" }
                check(guard.owned()) { "a fresh guard is not owned" }
                check(lock.locked()) { "held, but not locked" }
                assertEquals(guard.fencingToken, guard.extend(), "the fence after an extend")
                fences += guard.fencingToken
                guard.release()
                check(!guard.isValid && !guard.owned()) { "released, but still valid or owned" }
                check(!lock.locked()) { "released, but locked" }
            }
            checkIncreasing(fences)
        }

        suite.test("$kind: coroutines take turns, with strictly increasing fencing tokens") {
            val lock = Lock(Stores.fresh("coroutines"), Stores.of(kind), LockOptions(retryInterval = 10.milliseconds))
            val inside = AtomicInteger()
            val fences = Collections.synchronizedList(mutableListOf<Long>())
            withContext(Dispatchers.Default) {
                (1..6).map {
                    async {
                        repeat(4) {
                            lock.withLock { token ->
                                check(inside.incrementAndGet() == 1) { "two coroutines held the lock at once" }
                                fences += token
                                delay(1)
                                inside.decrementAndGet()
                            }
                        }
                    }
                }.awaitAll()
            }
            assertEquals(24, fences.size, "sections")
            checkIncreasing(fences)
            check(!lock.locked()) { "every section ended, but the lock is taken" }
        }

        suite.test("$kind: JVM threads take turns through the blocking calls") {
            val lock = Lock(Stores.fresh("threads"), Stores.of(kind), LockOptions(retryInterval = 10.milliseconds))
            val inside = AtomicInteger()
            val fences = Collections.synchronizedList(mutableListOf<Long>())
            val failures = Collections.synchronizedList(mutableListOf<Throwable>())
            val threads = (1..4).map {
                thread {
                    try {
                        repeat(4) {
                            lock.acquireBlocking(java.time.Duration.ofSeconds(30)).use { guard ->
                                check(inside.incrementAndGet() == 1) { "two threads held the lock at once" }
                                fences += guard.fencingToken
                                Thread.sleep(1)
                                inside.decrementAndGet()
                            }
                        }
                    } catch (e: Throwable) {
                        failures += e
                    }
                }
            }
            withContext(Dispatchers.IO) { threads.forEach { it.join() } }
            check(failures.isEmpty()) { "a thread failed: ${failures.first()}" }
            assertEquals(16, fences.size, "sections")
            checkIncreasing(fences)
            check(!lock.lockedBlocking()) { "every section ended, but the lock is taken" }
        }

        suite.test("$kind: a timeout gives up with a LockTimeoutException, which is a WouldBlockException") {
            val name = Stores.fresh("timeout")
            val holder = Lock(name, Stores.of(kind)).acquire()
            val lock = Lock(name, Stores.of(kind), LockOptions(retryInterval = 10.milliseconds))
            val start = TimeSource.Monotonic.markNow()
            val e = assertThrows<LockTimeoutException> { lock.acquire(timeout = 150.milliseconds) }
            check(start.elapsedNow() >= 140.milliseconds) { "gave up after ${start.elapsedNow()}" }
            check(e is WouldBlockException && e is TenureException) { "not in the hierarchy" }
            assertEquals("LOCK_TIMEOUT", e.code, "code")
            assertEquals(name, e.lockName, "lock name")
            assertEquals(150.milliseconds, e.timeout, "timeout")
            val refused = assertThrows<WouldBlockException> { lock.tryAcquire() }
            assertEquals("WOULD_BLOCK", refused.code, "code")
            check(refused !is LockTimeoutException) { "a refusal is not a timeout" }
            holder.release()
            lock.tryAcquire().release()
        }

        suite.test("$kind: a cancelled acquire never takes the lock later") {
            val name = Stores.fresh("cancel")
            val holder = Lock(name, Stores.of(kind)).acquire()
            val lock = Lock(name, Stores.of(kind), LockOptions(retryInterval = 10.milliseconds))
            coroutineScope {
                val waiting = launch { lock.acquire() }
                delay(100)
                waiting.cancelAndJoin()
                check(waiting.isCancelled) { "the waiting acquire was not cancelled" }
            }
            assertThrows<TimeoutCancellationException> { withTimeout(100.milliseconds) { lock.acquire() } }
            holder.release()
            // Had a cancelled waiter been granted the lock, it would hold it now, with nobody to release it.
            delay(300)
            check(!lock.locked()) { "a cancelled acquire took the lock" }
            lock.tryAcquire().release()
        }

        suite.test("$kind: withLock releases when its block throws or is cancelled") {
            val lock = Lock(Stores.fresh("withlock"), Stores.of(kind))
            assertEquals(42, lock.withLock { 42 }, "the block's value")
            assertThrows<IllegalStateException> { lock.withLock { error("the job failed") } }
            check(!lock.locked()) { "an exception left the lock taken" }
            coroutineScope {
                // Cancelled once the block runs: a cancellation that lands while the acquire is
                // still returning (the store already shows the lock taken) gives the grant back
                // in the background, as documented, which the check below would race.
                val started = CompletableDeferred<Unit>()
                val job = launch {
                    lock.withLock {
                        started.complete(Unit)
                        delay(60_000)
                    }
                }
                started.await()
                check(lock.locked()) { "the block runs without the lock taken" }
                job.cancelAndJoin()
            }
            check(!lock.locked()) { "a cancellation left the lock taken" }
        }

        suite.test("$kind: a kept-alive lease outlives three leases, then ends at its maximum hold") {
            val lease = shortLease(kind)
            val name = Stores.fresh("keep")
            val lock = Lock(name, Stores.of(kind), LockOptions(leaseDuration = lease))
            val guard = lock.acquire()
            val fence = guard.fencingToken
            guard.keepAlive(maxHold = lease * 5)
            check(guard.keeping) { "not keeping after keepAlive" }
            delay(lease * 3 + lease / 2)
            check(guard.isValid && guard.owned()) { "the kept lease ran out" }
            assertEquals(fence, guard.fencingToken, "the fence of a kept lease")
            assertThrows<WouldBlockException> { Lock(name, Stores.of(kind)).tryAcquire() }
            check(withTimeout(lease * 4) { guard.lost() }) { "lost() reported a release at the maximum hold" }
            assertEquals(KeepAliveStop.MAX_HOLD, guard.keepAliveStop, "why it stopped")
            eventually(what = "the lock to be free after the maximum hold") { !lock.locked() }
            assertThrows<LockNotOwnedException> { guard.release() }
            guard.close() // released already: nothing to do, nothing thrown
        }

        suite.test("$kind: withLock keeps its lease alive past three leases, and a loss cancels the block with LockLostException") {
            val lease = shortLease(kind)
            val name = Stores.fresh("withlock-kept")
            val lock = Lock(name, Stores.of(kind), LockOptions(leaseDuration = lease))
            val value = lock.withLock { token ->
                delay(lease * 3 + lease / 2)
                assertThrows<WouldBlockException> { Lock(name, Stores.of(kind)).tryAcquire() }
                token
            }
            check(value > 0) { "the block's fence" }
            check(!lock.locked()) { "released after the block" }
            var cancelled = false
            val e = assertThrows<LockLostException> {
                lock.withLock(maxHold = lease) {
                    try {
                        delay(60_000)
                    } finally {
                        cancelled = true
                    }
                }
            }
            check(cancelled) { "the block ran on after the lease was lost" }
            assertEquals("max_hold", e.reason, "why")
            assertEquals("LOCK_LOST", e.code, "code")
            assertEquals(name, e.lockName, "lock name")
            eventually(what = "the lock to be free after the loss") { !lock.locked() }
        }

        suite.test("$kind: a lease that runs out is lost, and the next holder gets a higher fence") {
            val lease = shortLease(kind)
            val name = Stores.fresh("expiry")
            val first = Lock(name, Stores.of(kind), LockOptions(leaseDuration = lease)).acquire()
            check(withTimeout(lease * 2) { first.lost() }) { "lost() said released" }
            check(!first.isValid) { "valid after its lease ran out" }
            delay(outlast(kind, lease) - lease)
            val second = Lock(name, Stores.of(kind), LockOptions(retryInterval = 10.milliseconds)).acquire(timeout = 5.seconds)
            check(second.fencingToken > first.fencingToken) { "fence ${second.fencingToken} after ${first.fencingToken}" }
            val e = assertThrows<LockNotOwnedException> { first.release() }
            assertEquals(name, e.lockName, "lock name")
            assertThrows<LockNotOwnedException> { first.extend() }
            second.release()
            check(!second.lost()) { "lost() of a released guard said lost" }
        }
    }

    suite.test("memory: a guard closed by try-with-resources is released before close returns") {
        val lock = Lock(Stores.fresh("close"), Stores.of("memory"))
        repeat(50) {
            lock.acquireBlocking().use { yield() }
            lock.tryAcquireBlocking().close()
        }
        check(!lock.lockedBlocking()) { "closed, but taken" }
    }

    suite.test("memory: lost() completes with false when another coroutine releases") {
        val guard = Lock(Stores.fresh("lost"), Stores.of("memory")).acquire()
        coroutineScope {
            val watching = async { guard.lost() }
            delay(50)
            check(!watching.isCompleted) { "lost() completed while held" }
            guard.release()
            check(!watching.await()) { "lost() said lost after a release" }
        }
    }
}
