// A kept lease's losses told by cause, the warning before one (withLock's onWarning, a guard's
// warning()), and a loss that never throws on a Tenure thread.
package tenure.test

import java.util.Collections
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.delay
import tenure.LockBackend
import tenure.LockLostException
import tenure.Lock
import tenure.LockOptions
import tenure.SettingsValidationException
import tenure.Store

/**
 * A user-written store whose renewals throw while [failing], and answer a lower fence while
 * [regress] (its fences start at 11, so that the lower one is still a valid fence).
 */
private class Flaky(private val inner: MapBackend = MapBackend()) : LockBackend by inner {
    @Volatile var failing = false
    @Volatile var regress = false

    override suspend fun acquire(name: String, token: String, duration: Duration): Long? {
        if (failing) throw IllegalStateException("the store is unreachable")
        val fence = inner.acquire(name, token, duration) ?: return null
        return if (regress) fence + 9 else fence + 10
    }
}

/** [body], failing if an exception reached a thread's uncaught-exception handler meanwhile. */
private suspend fun nothingEscapes(body: suspend () -> Unit) {
    val escaped = Collections.synchronizedList(mutableListOf<Throwable>())
    val before = Thread.getDefaultUncaughtExceptionHandler()
    Thread.setDefaultUncaughtExceptionHandler { _, e -> escaped += e }
    try {
        body()
        delay(300)
    } finally {
        Thread.setDefaultUncaughtExceptionHandler(before)
    }
    check(escaped.isEmpty()) { "escaped to a thread: $escaped" }
}

fun lossTests(suite: Suite) {
    suite.test("losses: the warning comes before the loss, which says the store was unreachable") {
        nothingEscapes {
            val store = Flaky()
            val lock = Lock("job", Store.custom(locks = store), LockOptions(leaseDuration = 1500.milliseconds))
            val warnings = Collections.synchronizedList(mutableListOf<Duration>())
            var cancelled = false
            val e = assertThrows<LockLostException> {
                lock.withLock(onWarning = { left -> warnings += left }) {
                    store.failing = true
                    try {
                        delay(60_000)
                    } finally {
                        cancelled = true
                    }
                }
            }
            assertEquals("unreachable", e.reason, "why")
            check(cancelled) { "the block ran on after the loss" }
            assertEquals(1, warnings.size, "warnings")
            check(warnings[0] > Duration.ZERO && warnings[0] <= 500.milliseconds) { "a third of the lease by default: ${warnings[0]}" }
        }
    }

    suite.test("losses: a threshold of the user's, and an onWarning that throws is logged, the lease kept") {
        nothingEscapes {
            collecting { records ->
                val store = Flaky()
                val lock = Lock("job", Store.custom(locks = store), LockOptions(leaseDuration = 1500.milliseconds))
                val warned = Collections.synchronizedList(mutableListOf<Duration>())
                lock.withLock(warnBelow = 700.milliseconds, onWarning = { left ->
                    warned += left
                    throw IllegalStateException("the checkpoint failed")
                }) {
                    store.failing = true
                    eventually(what = "a warning") { warned.isNotEmpty() }
                    store.failing = false
                    delay(1600)
                }
                check(warned[0] > 300.milliseconds && warned[0] <= 700.milliseconds) { "warned with ${warned[0]} left" }
                check(!lock.locked()) { "released after the block" }
                val logged = synchronized(records) { records.any { it.message.startsWith("onWarning of the lock \"job\" threw") && it.thrown != null } }
                check(logged) { "the callback's exception was not logged" }
            }
        }
    }

    suite.test("losses: a regressed fence on renewal is a loss by fence regression") {
        nothingEscapes {
            val store = Flaky()
            val lock = Lock("job", Store.custom(locks = store), LockOptions(leaseDuration = 600.milliseconds))
            val e = assertThrows<LockLostException> {
                lock.withLock {
                    store.regress = true
                    delay(60_000)
                }
            }
            assertEquals("fence_regression", e.reason, "why")
        }
    }

    suite.test("losses: warnBelow not under half the lease is refused and the lock given back") {
        val lock = Lock("job", Store.custom(locks = Flaky()), LockOptions(leaseDuration = 2.seconds))
        val e = assertThrows<SettingsValidationException> { lock.withLock(warnBelow = 1500.milliseconds) { } }
        check("warn_below must be less than half the lease_duration" in e.message.orEmpty()) { e.message.orEmpty() }
        check(!lock.locked()) { "kept after a refused keep-alive" }
        val guard = lock.acquire()
        assertThrows<SettingsValidationException> { guard.keepAlive(warnBelow = Duration.ZERO) }
        assertThrows<SettingsValidationException> { guard.keepAlive(warnBelow = 1.seconds) }
        check(guard.isValid && !guard.keeping) { "a refused keep-alive changed the guard" }
        guard.release()
    }

    suite.test("losses: a kept lease lost with nobody listening throws nowhere") {
        nothingEscapes {
            val store = Flaky()
            val guard = Lock("job", Store.custom(locks = store), LockOptions(leaseDuration = 600.milliseconds)).acquire()
            guard.keepAlive(warnBelow = 250.milliseconds)
            store.failing = true
            val left = guard.warning()
            check(left != null && left > Duration.ZERO && left <= 250.milliseconds) { "warned with $left" }
            check(guard.lost()) { "lost() said released" }
            assertEquals(null, guard.warning(), "a warning after the loss")
            assertEquals(tenure.KeepAliveStop.UNREACHABLE, guard.keepAliveStop, "why")
            store.failing = false
            // (the store's lease outlives the holder's belief by 1 %: a release may still find it)
            try {
                guard.release()
            } catch (_: tenure.LockNotOwnedException) {
            }
        }
    }
}
