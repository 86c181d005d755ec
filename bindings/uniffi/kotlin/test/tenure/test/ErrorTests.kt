// Bad input and failing stores: clear errors of the right class, naming the problem, never a
// hang, and never a password.
package tenure.test

import java.util.concurrent.TimeUnit
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import tenure.ElectionOptions
import tenure.LeaderElection
import tenure.Lock
import tenure.LockAcquireException
import tenure.LockBackendException
import tenure.LockOptions
import tenure.SettingsValidationException
import tenure.Store
import tenure.StoreException
import tenure.TaskLock
import tenure.TaskLockOptions

/** The settings error [block] throws, which must name [field]. */
inline fun settingsError(field: String?, block: () -> Unit): SettingsValidationException {
    val e = assertThrows<SettingsValidationException>(block)
    assertEquals(field, e.field, "the field named by \"${e.message}\"")
    assertEquals("SETTINGS_INVALID", e.code, "code")
    return e
}

fun errorTests(suite: Suite) {
    suite.test("bad names, durations and configurations are settings errors naming the setting") {
        val store = Stores.of("memory")
        settingsError("name") { Lock("", store) }
        for (bad in listOf(Duration.ZERO, (-1).seconds, Duration.INFINITE, (200L * 365).days())) {
            val e = settingsError("leaseDuration") { Lock("n", store, LockOptions(leaseDuration = bad)) }
            check("leaseDuration" in e.message!!) { "the message does not name the setting: ${e.message}" }
        }
        settingsError("retryInterval") { Lock("n", store, LockOptions().withRetryInterval(java.time.Duration.ofMillis(-5))) }
        // The core names the jitter as grelmicro does.
        settingsError("retry_jitter") { Lock("n", store, LockOptions(retryJitter = 1.5)) }
        settingsError("retry_jitter") { Lock("n", store, LockOptions(retryJitter = Double.NaN)) }
        settingsError("timeout") { Lock("n", store).acquire(timeout = (-1).milliseconds) }
        settingsError("timeout") { Lock("n", store).acquireBlocking(java.time.Duration.ZERO) }
        val guard = Lock("n", store).acquire()
        settingsError("maxHold") { guard.keepAlive(Duration.ZERO) }
        guard.release()
        settingsError("minHoldDuration") { TaskLock("n", store, TaskLockOptions(minHoldDuration = (-2).seconds)) }
        settingsError("maxAge") { LeaderElection("n", store).isLeaderConfirmedWithin(Duration.INFINITE) }
        // An inconsistent configuration: the renew deadline must be shorter than the lease.
        val e = assertThrows<SettingsValidationException> {
            LeaderElection("n", store, ElectionOptions(leaseDuration = 2.seconds, renewDeadline = 3.seconds))
        }
        check("renew" in e.message!!.lowercase()) { "the message does not say what is inconsistent: ${e.message}" }
        settingsError("worker") { Lock("n", store, LockOptions(worker = "")) }
        assertThrows<SettingsValidationException> {
            LeaderElection("n", store, ElectionOptions(metadata = mapOf("pod" to "x".repeat(1 shl 20))))
        }
    }

    suite.test("bad URLs are settings errors naming the part, and no message shows a password") {
        val e = assertThrows<SettingsValidationException> { Store.open("nosuch://host") }
        check("redis" in e.message!! && "sqlite" in e.message!!) { "the known schemes are not listed: ${e.message}" }
        val sslmode = assertThrows<SettingsValidationException> { Store.openBlocking("postgresql://127.0.0.1/test?sslmode=sometimes") }
        check("sslmode" in sslmode.message!!) { "the message does not name sslmode: ${sslmode.message}" }
        settingsError("kind") { Store.fromEnv("nosuch") }
        val port = Stores.freePort()
        for (url in listOf("redis://:s3cret@127.0.0.1:$port", "postgresql://u:s3cret@127.0.0.1:$port/db?connect_timeout=1")) {
            val start = TimeSource.Monotonic.markNow()
            val failed = assertThrows<StoreException> { Store.open(url) }
            check(start.elapsedNow() < 15.seconds) { "opening an unreachable store took ${start.elapsedNow()}" }
            check("s3cret" !in failed.toString()) { "a message shows the password: $failed" }
            check(failed.code.startsWith("STORE_")) { "code ${failed.code}" }
        }
    }

    suite.test("GREL_* variables configure what the code leaves unset, unless envLoad is false") {
        // scripts/test-kotlin.sh sets GREL_LOCK_KOTLIN_ENV_LEASE_DURATION=7.
        val store = Stores.of("memory")
        assertEquals(7.seconds, Lock("kotlin-env", store).settings().leaseDuration, "from the environment")
        assertEquals(9.seconds, Lock("kotlin-env", store, LockOptions(leaseDuration = 9.seconds)).settings().leaseDuration, "given")
        assertEquals(60.seconds, Lock("kotlin-env", store, LockOptions(envLoad = false)).settings().leaseDuration, "default")
        assertEquals(1.seconds, TaskLock("kotlin-env", store).settings().minHoldDuration, "a task lock's default")
    }

    suite.test("a frozen store fails calls within their backend timeout, then recovers; a closed one fails them") {
        val port = Stores.freePort()
        val redis = ProcessBuilder("redis-server", "--port", "$port", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
            .redirectOutput(ProcessBuilder.Redirect.DISCARD).start()
        try {
            val store = withContext(Dispatchers.IO) {
                var opened: Store? = null
                val deadline = TimeSource.Monotonic.markNow() + 10.seconds
                while (opened == null) {
                    opened = runCatching { Store.open("redis://127.0.0.1:$port") }.getOrNull()
                    if (opened == null) { check(deadline.hasNotPassedNow()) { "redis did not start" }; Thread.sleep(50) }
                }
                opened
            }
            val lock = Lock(Stores.fresh("frozen"), store, LockOptions(backendTimeout = 300.milliseconds))
            lock.acquire().release()
            signal("STOP", redis.pid())
            try {
                val start = TimeSource.Monotonic.markNow()
                val e = assertThrows<LockAcquireException> { lock.acquire(timeout = 5.seconds) }
                check(start.elapsedNow() < 5.seconds) { "a frozen store held the call ${start.elapsedNow()}" }
                check(e is LockBackendException) { "not a LockBackendException" }
                assertEquals("STORE_TIMEOUT", (e.cause as StoreException).code, "the store's failure")
            } finally {
                signal("CONT", redis.pid())
            }
            lock.acquire(timeout = 5.seconds).release()
            store.close()
            val closed = assertThrows<LockAcquireException> { lock.acquire(timeout = 1.seconds) }
            assertEquals("STORE_CLOSED", (closed.cause as StoreException).code, "the store's failure after close")
        } finally {
            redis.destroyForcibly().waitFor(5, TimeUnit.SECONDS)
        }
    }
}

private fun Long.days() = (this * 86_400).seconds

private fun signal(which: String, pid: Long) {
    check(ProcessBuilder("kill", "-$which", "$pid").start().waitFor() == 0) { "kill -$which $pid failed" }
}
