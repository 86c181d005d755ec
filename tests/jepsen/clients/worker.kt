// A client of the Jepsen harness through the JVM package `tenure` (the jar scripts/test-kotlin.sh
// builds), written as a Redisson user writes it: a Lock on an open store, acquire, the guarded
// work, release, again and again. It tells the harness each operation (and reaches the fenced
// resource) over one TCP connection: see src/serve.rs. With PERMITS above 0 it holds permits of a
// Semaphore of that many instead, and writes to the resource as it enters and as it leaves.
// Usage: java -cp … tenure.jepsen.WorkerKt URL NAME HARNESS_ADDRESS PROCESS LEASE_SECONDS TIMEOUT_SECONDS PERMITS
package tenure.jepsen

import java.net.Socket
import kotlin.random.Random
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import tenure.Lock
import tenure.LockNotOwnedException
import tenure.LockOptions
import tenure.LockTimeoutException
import tenure.Semaphore
import tenure.Store
import tenure.TenureException

/** One request, one answer line, in turn. */
class Harness(address: String, process: String, name: String) {
    private val socket = Socket(address.substringBeforeLast(':'), address.substringAfterLast(':').toInt())
    private val out = socket.getOutputStream().bufferedWriter()
    private val answers = socket.getInputStream().bufferedReader()

    init {
        say("hello $process $name ${ProcessHandle.current().pid()}")
    }

    fun say(line: String): String {
        out.write(line + "\n")
        out.flush()
        val answer = answers.readLine() ?: error("the harness hung up")
        check(!answer.startsWith("error")) { "the harness answered $answer to $line" }
        return answer
    }
}

fun main(args: Array<String>) = runBlocking {
    val (url, name, address, process, lease) = args
    val timeout = args[5].toDouble().seconds
    val permits = args[6].toInt()
    val harness = Harness(address, process, name)
    Store.open(url).use { store ->
        val options = LockOptions(leaseDuration = lease.toDouble().seconds, retryInterval = 50.milliseconds, envLoad = false)
        val lock = if (permits > 0) Semaphore(name, permits, store, options) else Lock(name, store, options)
        while (true) {
            harness.say("invoke acquire")
            val guard = try {
                lock.acquire(timeout)
            } catch (e: LockTimeoutException) {
                harness.say("fail")
                continue
            } catch (e: TenureException) {
                harness.say("info") // the store failed: the lease may have been granted
                delay(100)
                continue
            }
            val fence = guard.fencingToken
            harness.say("ok $fence")
            if (permits > 0) {
                harness.say("write $fence") // in
                delay(Random.nextLong(200))
                harness.say("write $fence") // out
            } else {
                val values = harness.say("read $fence").split(' ').drop(1)
                delay(Random.nextLong(200))
                harness.say((listOf("add", fence.toString()) + values).joinToString(" "))
            }
            harness.say("invoke release")
            try {
                guard.release()
                harness.say("ok")
            } catch (e: LockNotOwnedException) {
                harness.say("fail") // the lease ran out meanwhile
            } catch (e: TenureException) {
                harness.say("info")
            }
        }
    }
}
