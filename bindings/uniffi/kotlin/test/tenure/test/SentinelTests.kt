// A Redis master behind Sentinel, from Kotlin: the store opened from a redis+sentinel:// URL
// (through the shared store opener), withLock as a Redisson user writes it, and a failover (the
// master killed): the next grants come from the replica the sentinel promotes, with fences above
// those before. The test starts its own master, replica and sentinel on free ports.
package tenure.test

import java.nio.file.Files
import java.util.concurrent.TimeUnit
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.delay
import kotlinx.coroutines.withContext
import tenure.Lock
import tenure.LockOptions
import tenure.Store

fun sentinelTests(suite: Suite) {
    suite.test("locks through a redis+sentinel:// URL, across a failover") {
        val dir = Files.createTempDirectory("tenure-kotlin-sentinel-")
        val (master, replica, sentinel) = Triple(Stores.freePort(), Stores.freePort(), Stores.freePort())
        val base = arrayOf("--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", "$dir")
        fun server(vararg args: String) = ProcessBuilder("redis-server", *args).redirectOutput(ProcessBuilder.Redirect.DISCARD).start()
        val procs = mutableListOf(server("--port", "$master", *base))
        procs += server("--port", "$replica", *base, "--replicaof", "127.0.0.1", "$master")
        val config = dir.resolve("sentinel.conf")
        Files.writeString(
            config,
            "port $sentinel\nbind 127.0.0.1\ndir $dir\nsentinel monitor mymaster 127.0.0.1 $master 1\n" +
                "sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n",
        )
        procs += server(config.toString(), "--sentinel")
        var store: Store? = null
        try {
            val prefix = Stores.fresh("tenure-kotlin-sentinel")
            val url = "redis+sentinel://127.0.0.1:$sentinel/mymaster/0?prefix=$prefix:&command_timeout=1"
            eventually(within = 20.seconds, what = "the master through the sentinel") {
                store = runCatching { Store.open(url) }.getOrNull()
                store != null
            }
            // The sentinel learns of the replica from the master; it can promote it only once it has.
            suspend fun cli(port: Int, vararg args: String) = withContext(Dispatchers.IO) {
                ProcessBuilder("redis-cli", "-p", "$port", *args).start().inputStream.bufferedReader().readText()
            }
            eventually(within = 20.seconds, what = "the sentinel to know the replica") {
                cli(sentinel, "SENTINEL", "replicas", "mymaster").contains("$replica")
            }
            val lock = Lock("report", store!!, LockOptions(leaseDuration = 5.seconds))
            val fences = mutableListOf<Long>()
            repeat(3) {
                // As a Redisson user writes it: the block runs under the lock, released after.
                fences += lock.withLock { token ->
                    check(runCatching { Lock("report", store!!).tryAcquire() }.isFailure) { "held while the block runs" }
                    token
                }
            }
            checkIncreasing(fences)
            // Once the replica has the last fence, the master is killed.
            eventually(what = "the replica in sync") {
                cli(replica, "GET", "$prefix:fence:lock:report").trim() == "${fences.last()}"
            }
            procs[0].destroyForcibly().waitFor(5, TimeUnit.SECONDS)
            var after = 0L
            eventually(within = 30.seconds, what = "a grant from the promoted replica") {
                after = runCatching { lock.withLock(timeout = 1.seconds) { token -> token } }.getOrDefault(0L)
                if (after == 0L) delay(50)
                after != 0L
            }
            check(after > fences.last()) { "fence $after after $fences" }
        } finally {
            store?.close()
            for (proc in procs) proc.destroyForcibly().waitFor(5, TimeUnit.SECONDS)
            dir.toFile().deleteRecursively()
        }
    }
}
