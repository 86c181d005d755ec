// A small test runner (no test framework can be downloaded here): named cases, real assertions,
// a summary, and a nonzero exit status when any case fails.
package tenure.test

import kotlin.time.Duration
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource
import kotlinx.coroutines.withTimeout

class AssertionFailed(message: String) : AssertionError(message)

fun check(condition: Boolean, message: () -> String) {
    if (!condition) throw AssertionFailed(message())
}

fun <T> assertEquals(expected: T, actual: T, what: String = "value") =
    check(expected == actual) { "$what: expected $expected, got $actual" }

/** The exception [block] throws, which must be a [T]. */
inline fun <reified T : Throwable> assertThrows(block: () -> Unit): T {
    try {
        block()
    } catch (e: Throwable) {
        if (e is T) return e
        throw AssertionFailed("expected ${T::class.simpleName}, got ${e::class.qualifiedName}: ${e.message}")
    }
    throw AssertionFailed("expected ${T::class.simpleName}, nothing was thrown")
}

/** Strictly increasing. */
fun checkIncreasing(fences: List<Long>) {
    for (i in 1 until fences.size) check(fences[i] > fences[i - 1]) { "fence ${fences[i]} after ${fences[i - 1]} in $fences" }
}

/** Polls [condition] until it holds, failing after [within]. */
suspend fun eventually(within: Duration = 10.seconds, what: String, condition: suspend () -> Boolean) {
    val start = TimeSource.Monotonic.markNow()
    while (!condition()) {
        check(start.elapsedNow() < within) { "not within $within: $what" }
        kotlinx.coroutines.delay(10)
    }
}

class Suite {
    private val cases = mutableListOf<Pair<String, suspend () -> Unit>>()

    fun test(name: String, body: suspend () -> Unit) {
        cases += name to body
    }

    /** Runs the cases whose names contain [filter]; the number that failed. */
    suspend fun run(filter: String?): Int {
        var failed = 0
        var ran = 0
        for ((name, body) in cases) {
            if (filter != null && !name.contains(filter)) continue
            ran++
            val start = TimeSource.Monotonic.markNow()
            try {
                withTimeout(120.seconds) { body() }
                println("ok   $name (${start.elapsedNow().inWholeMilliseconds} ms)")
            } catch (e: Throwable) {
                failed++
                println("FAIL $name: ${e::class.simpleName}: ${e.message}")
                e.printStackTrace(System.out)
            }
        }
        println("\n${ran - failed} passed, $failed failed")
        return failed
    }
}
