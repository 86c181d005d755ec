// Kotlin contenders for rw.sh and semaphore.sh through the JVM package `tenure` (the jar
// scripts/test-kotlin.sh builds), written as Kotlin users write them (`withLock`, `withPermit`).
// rw: alternate reads and writes of read-write lock NAME, appending `read <generation> kotlin` /
// `done-read <generation>` and `write <fence> kotlin` / `done-write <fence>` to LOG.
// semaphore: hold one of PERMITS permits of semaphore NAME per round, appending
// `in <fence> kotlin` / `out <fence>` to LOG.
// Usage: java -cp … tenure.interop.Kotlin_rw_semKt rw URL NAME LOG ROUNDS
//        java -cp … tenure.interop.Kotlin_rw_semKt semaphore URL NAME PERMITS LOG ROUNDS
package tenure.interop

import java.io.File
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import tenure.LockOptions
import tenure.ReadWriteLock
import tenure.Semaphore
import tenure.Store

private val options = LockOptions(leaseDuration = 10.seconds, retryInterval = 20.milliseconds, envLoad = false)

fun main(args: Array<String>) = runBlocking {
    val url = args[1]
    val name = args[2]
    Store.open(url).use { store ->
        when (args[0]) {
            "rw" -> {
                val sections = File(args[3])
                val doc = ReadWriteLock(name, store, options)
                repeat(args[4].toInt()) { round ->
                    if (round % 2 == 0) {
                        doc.read.withLock { generation ->
                            sections.appendText("read $generation kotlin\n")
                            delay(50)
                            sections.appendText("done-read $generation\n")
                        }
                    } else {
                        doc.write.withLock { token ->
                            sections.appendText("write $token kotlin\n")
                            delay(30)
                            sections.appendText("done-write $token\n")
                        }
                    }
                    delay(10)
                }
            }
            "semaphore" -> {
                val sections = File(args[4])
                val pool = Semaphore(name, args[3].toInt(), store, options)
                repeat(args[5].toInt()) {
                    pool.withPermit { token ->
                        sections.appendText("in $token kotlin\n")
                        delay(50)
                        sections.appendText("out $token\n")
                    }
                    delay(10)
                }
            }
            else -> error("usage: rw URL NAME LOG ROUNDS | semaphore URL NAME PERMITS LOG ROUNDS")
        }
    }
}
