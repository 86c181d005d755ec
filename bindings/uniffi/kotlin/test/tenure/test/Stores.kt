// The stores the tests run on: memory, a SQLite file, the machine's Redis and PostgreSQL
// (TENURE_REDIS_URL, TENURE_POSTGRES_URL), each under fresh keys or tables, and an etcd member
// this process starts (Debian's `etcd`), killed at exit.
package tenure.test

import java.net.ServerSocket
import java.net.Socket
import java.nio.file.Files
import java.nio.file.Path
import java.util.concurrent.atomic.AtomicInteger
import tenure.Store

object Stores {
    val redisUrl: String = System.getenv("TENURE_REDIS_URL") ?: "redis://127.0.0.1:6379"
    val postgresUrl: String = System.getenv("TENURE_POSTGRES_URL") ?: "postgresql://postgres@127.0.0.1:5432/test"
    private val count = AtomicInteger()
    private val dir: Path = Files.createTempDirectory("tenure-kotlin-")
    private val opened = mutableMapOf<String, Store>()
    private var etcd: Process? = null

    /** A fresh name, unique to this process and call. */
    fun fresh(stem: String) = "${stem}_${ProcessHandle.current().pid()}_${System.currentTimeMillis()}_${count.incrementAndGet()}"

    /** A fresh URL of a store of [kind]. */
    fun url(kind: String): String {
        val table = fresh("kotlin")
        return when (kind) {
            "memory" -> "memory:"
            "sqlite" -> "sqlite://${dir.resolve(fresh("locks"))}.db"
            "redis" -> "$redisUrl/?prefix=${fresh("tenure-kotlin")}:"
            "postgres" -> "$postgresUrl?lock_table=${table}_locks&leader_table=${table}_leaders" +
                "&schedule_table=${table}_schedules&rwlock_table=${table}_rwlocks&semaphore_table=${table}_semaphores"
            "etcd" -> "${etcdUrl()}/?prefix=${fresh("tenure-kotlin")}/"
            else -> error("no store $kind")
        }
    }

    val kinds = listOf("memory", "sqlite", "redis", "postgres", "etcd")

    /** The store of [kind] this run shares (opened on first use, closed at the end). */
    suspend fun of(kind: String): Store = opened[kind] ?: Store.open(url(kind)).also { opened[kind] = it }

    fun closeAll() {
        for (store in opened.values) store.close()
        etcd?.destroyForcibly()
        dir.toFile().deleteRecursively()
    }

    fun freePort(): Int = ServerSocket(0).use { it.localPort }

    @Synchronized
    private fun etcdUrl(): String {
        val (client, peer) = freePort() to freePort()
        if (etcd == null) {
            val (c, p) = "http://127.0.0.1:$client" to "http://127.0.0.1:$peer"
            etcd = ProcessBuilder(
                "etcd", "--name", "t", "--data-dir", dir.resolve("etcd").toString(), "--listen-client-urls", c,
                "--advertise-client-urls", c, "--listen-peer-urls", p, "--initial-advertise-peer-urls", p,
                "--initial-cluster", "t=$p",
            ).redirectErrorStream(true).redirectOutput(dir.resolve("etcd.log").toFile()).start()
            Runtime.getRuntime().addShutdownHook(Thread { etcd?.destroyForcibly() })
            val deadline = System.nanoTime() + 20_000_000_000
            while (runCatching { Socket("127.0.0.1", client).close() }.isFailure) {
                check(System.nanoTime() < deadline) { "etcd did not start" }
                Thread.sleep(50)
            }
            etcdPort = client
        }
        return "etcd://127.0.0.1:$etcdPort"
    }

    private var etcdPort = 0
}
