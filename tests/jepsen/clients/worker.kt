// A client of the Jepsen harness through the JVM package `tenure` (the jar scripts/test-kotlin.sh
// builds), written as a Redisson user writes it: a Lock on an open store, acquire, the guarded
// work, release, again and again. It tells the harness each operation (and reaches the fenced
// resource) over one TCP connection: see src/serve.rs. With PERMITS above 0 it holds permits of a
// Semaphore of that many instead, and writes to the resource as it enters and as it leaves. With
// PERMITS `election` it runs a LeaderElection, and each time it leads writes under its term's
// fencing token, then stops (the next turn starts it again).
// Usage: java -cp … tenure.jepsen.WorkerKt URL NAME HARNESS_ADDRESS PROCESS LEASE_SECONDS TIMEOUT_SECONDS PERMITS
package tenure.jepsen

import java.net.Socket
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import tenure.ElectionOptions
import tenure.LeaderElection
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

/** Reads the set under [fence], waits a little (a pause can fall here), writes it back. */
suspend fun section(harness: Harness, fence: Long) {
    val values = harness.say("read $fence").split(' ').drop(1)
    delay(Random.nextLong(200))
    harness.say((listOf("add", fence.toString()) + values).joinToString(" "))
}

suspend fun elections(harness: Harness, store: Store, name: String, lease: Duration, timeout: Duration) {
    val options = ElectionOptions(
        leaseDuration = lease,
        renewDeadline = lease * 0.6,
        retryInterval = lease * 0.1,
        backendTimeout = lease * 0.3,
        envLoad = false,
    )
    LeaderElection(name, store, options).use { election ->
        while (true) {
            harness.say("invoke acquire")
            election.start()
            val fence = withTimeoutOrNull(timeout) { election.waitForLeader() }?.let { election.fencingToken }
            if (fence == null) {
                harness.say("fail") // not leading (or no longer): nothing granted that this turn uses
            } else {
                harness.say("ok $fence")
                section(harness, fence)
                harness.say("invoke release")
            }
            election.stop()
            if (fence != null) harness.say("info") // the release on stop reports nothing
        }
    }
}

/** The store, opened again while it is unavailable (a failover as the worker starts), as a
 * supervisor restarts a service that could not open it. */
suspend fun opened(url: String): Store {
    while (true) {
        try {
            return Store.open(url)
        } catch (e: TenureException) {
            System.err.println("the store cannot be opened yet: ${e.message}")
            delay(100)
        }
    }
}

fun main(args: Array<String>) = runBlocking {
    val (url, name, address, process, lease) = args
    val timeout = args[5].toDouble().seconds
    val harness = Harness(address, process, name)
    if (args[6] == "election") {
        opened(url).use { store -> elections(harness, store, name, lease.toDouble().seconds, timeout) }
        return@runBlocking
    }
    val permits = args[6].toInt()
    opened(url).use { store ->
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
                section(harness, fence)
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
