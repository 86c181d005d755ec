// One coroutine's acquire + release from Kotlin beside the same cycle run in Rust in the same
// process (bench_rust_cycles, the `bench` feature), on memory and on Redis, in interleaved slices:
// Rust, Kotlin `suspend` (acquire/release) in `runBlocking` and on `Dispatchers.Default`, Kotlin `withLock`, Java-style blocking calls, and the
// generated layer alone (no Kotlin package on top); then a wake-up from Tenure's runtime alone. Prints one `store step microseconds` line per
// median; asserts nothing (scripts/bench-kotlin.sh reports the ratios).
// Usage: java … tenure.bench.BenchKt REDIS_URL
package tenure.bench

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import tenure.Lock
import tenure.LockOptions
import tenure.Store
import tenure.ffi.benchRustCycles
import tenure.ffi.benchWoken
import tenure.ffi.benchWokenBlocking

const val SLICES = 31

fun median(xs: List<Double>) = xs.sorted()[xs.size / 2]

/** Microseconds per call of [step], over [batch] calls. */
inline fun timed(batch: Int, step: () -> Unit): Double {
    val start = System.nanoTime()
    repeat(batch) { step() }
    return (System.nanoTime() - start) / 1000.0 / batch
}

fun main(args: Array<String>) = runBlocking {
    val redis = args[0]
    val prefix = "tenure-bench-kotlin-${ProcessHandle.current().pid()}"
    for ((kind, url, batch) in listOf(Triple("memory", "memory:", 2000), Triple("redis", "$redis/?prefix=$prefix:", 200))) {
        val store = Store.open(url)
        val raw = tenure.ffi.Store.open(url) // the generated layer's own handle on the same store
        val lock = Lock("kotlin", store, LockOptions(envLoad = false))
        val rawLock = tenure.ffi.Lock("generated", raw, tenure.ffi.LockOptions(envLoad = false))
        val samples = mutableMapOf<String, MutableList<Double>>()
        for (slice in 0..SLICES) {
            val times = mapOf(
                "rust" to benchRustCycles(raw, "rust", batch.toUInt(), true),
                "rust-blocked" to benchRustCycles(raw, "rust", batch.toUInt(), false),
                "kotlin-suspend" to timed(batch) { lock.acquire().release() },
                "kotlin-suspend-default" to withContext(Dispatchers.Default) { timed(batch) { lock.acquire().release() } },
                "kotlin-withLock" to timed(batch) { lock.withLock { } },
                "kotlin-blocking" to timed(batch) { lock.acquireBlocking().releaseBlocking() },
                "generated-suspend" to timed(batch) { rawLock.acquire().release() },
            )
            if (slice > 0) times.forEach { (step, us) -> samples.getOrPut(step) { mutableListOf() } += us }
        }
        for ((step, xs) in samples) println("$kind $step ${"%.2f".format(median(xs))}")
        store.close()
    }
    // A wake-up from Tenure's runtime into the caller, beside a store's answer: in a coroutine
    // (uniffi's poll and callback, and the dispatcher's resume) and in a blocked thread, at once
    // and 100 us after the call (the caller has parked by then, as it has for a store's answer).
    for (after in listOf(0uL, 100uL)) {
        val wakes = mutableMapOf<String, MutableList<Double>>()
        for (slice in 0..SLICES) {
            val times = mapOf(
                "suspend" to timed(300) { benchWoken(after) },
                "suspend-default" to withContext(Dispatchers.Default) { timed(300) { benchWoken(after) } },
                "blocking" to timed(300) { benchWokenBlocking(after) },
            )
            if (slice > 0) times.forEach { (step, us) -> wakes.getOrPut(step) { mutableListOf() } += us }
        }
        for ((step, xs) in wakes) println("wake-$after $step ${"%.2f".format(median(xs))}")
    }
}
