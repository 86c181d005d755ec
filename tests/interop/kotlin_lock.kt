// A Kotlin contender for store.sh: takes lock NAME ROUNDS times through the JVM package
// `tenure` (the jar scripts/test-kotlin.sh builds), each critical section appending
// `start <fence> kotlin` and `end <fence>` to LOG. Half the rounds go through coroutines
// (`withLock`), half through a thread's blocking calls (try-with-resources in Java's words).
// Usage: java -cp … tenure.interop.Kotlin_lockKt URL NAME LOG ROUNDS
package tenure.interop

import java.io.File
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import tenure.Lock
import tenure.LockOptions
import tenure.Store

fun main(args: Array<String>) = runBlocking {
    val (url, name, log, rounds) = args
    val sections = File(log)
    Store.open(url).use { store ->
        val lock = Lock(name, store, LockOptions(leaseDuration = 10.seconds, retryInterval = 20.milliseconds, envLoad = false))
        repeat(rounds.toInt()) { round ->
            if (round % 2 == 0) {
                lock.withLock { token ->
                    sections.appendText("start $token kotlin\n")
                    delay(30)
                    sections.appendText("end $token\n")
                }
            } else {
                lock.acquireBlocking().use { guard ->
                    sections.appendText("start ${guard.fencingToken} kotlin\n")
                    Thread.sleep(30)
                    sections.appendText("end ${guard.fencingToken}\n")
                }
            }
            delay(10)
        }
    }
}
