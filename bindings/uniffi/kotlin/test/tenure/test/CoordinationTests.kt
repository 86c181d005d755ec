// Coordination (grelmicro's): one store for every kind of primitive or one per kind, primitives
// made without a store inside run { } (and outside any run: OutOfContextException), a missing
// kind named, and the stores' reach judged under GREL_ENVIRONMENT (in a child JVM, whose
// environment the test sets).
package tenure.test

import java.util.concurrent.TimeUnit
import kotlin.system.exitProcess
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.runBlocking
import tenure.BackendScopeException
import tenure.Coordination
import tenure.CoordinationBackendException
import tenure.ElectionOptions
import tenure.LeaderElection
import tenure.Lock
import tenure.OutOfContextException
import tenure.ReadWriteLock
import tenure.Semaphore
import tenure.SettingsValidationException
import tenure.Store
import tenure.TaskLock
import tenure.TenureException

fun coordinationTests(suite: Suite) {
    for (kind in Stores.kinds) {
        suite.test("$kind: a Coordination serves every kind of primitive from one store, and inside run { } without one") {
            val coordination = Coordination(Stores.of(kind), name = "orders-app", requires = "process")
            assertEquals("orders-app", coordination.name, "name")
            assertEquals("process", coordination.requires, "requires")
            val name = Stores.fresh("coordinated")
            val fence = coordination.lock(name).withLock { token -> token }
            check(fence > 0) { "fence $fence" }
            check(coordination.taskLock("$name-task").runOnce { true } == true) { "the task did not run" }
            coordination.readWriteLock("$name-rw").read.withLock { }
            coordination.semaphore("$name-sem", 2).withPermit { }
            val next = coordination.run {
                // grelmicro's ambient store: primitives made without one, here and in child coroutines
                val inChild = async(Dispatchers.Default) { Lock(name).withLock { token -> token } }.await()
                check(inChild > fence) { "the ambient lock is another lock: $inChild after $fence" }
                TaskLock("$name-task-2").runOnce { }
                ReadWriteLock("$name-rw").write.withLock { }
                Semaphore("$name-sem", 2).withPermit { }
                Lock(name).withLock { token -> token }
            }
            check(next > fence) { "fence $next after $fence" }
            assertThrows<OutOfContextException> { Lock(name) }
        }
    }

    suite.test("coordination: a store per kind replaces the shared one, and a missing kind is named") {
        val own = Store.custom(locks = MapBackend(), scope = "process")
        val elections = Stores.of("memory")
        val coordination = Coordination(own, election = elections, requires = "process")
        check(coordination.lock("orders").withLock { token -> token } == 1L) { "not my store's first fence" }
        val options = ElectionOptions(leaseDuration = 2.seconds, renewDeadline = 1.seconds, retryInterval = 20.milliseconds, backendTimeout = 500.milliseconds)
        coordination.leaderElection(Stores.fresh("leader"), options).use { election ->
            election.start()
            eventually(what = "leads on the election store") { election.isLeader }
        }
        val e = assertThrows<CoordinationBackendException> { coordination.semaphore("pool", 2) }
        check("semaphore" in e.message.orEmpty()) { e.message.orEmpty() }
        coordination.run {
            assertThrows<CoordinationBackendException> { ReadWriteLock("doc") }
            LeaderElection(Stores.fresh("ambient-leader"), options).close()
        }
        assertEquals("requires", assertThrows<SettingsValidationException> { Coordination(own, requires = "galaxy") }.field, "field")
    }

    suite.test("coordination: GREL_ENVIRONMENT=production refuses a store that reaches less far than required") {
        val java = ProcessHandle.current().info().command().orElse("java")
        val child = ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "tenure.test.ScopeCheck")
            .redirectErrorStream(true)
            .apply { environment()["GREL_ENVIRONMENT"] = "production" }
            .start()
        val output = child.inputStream.bufferedReader().readText()
        check(child.waitFor(60, TimeUnit.SECONDS)) { "the child JVM did not end" }
        val lines = output.lines().filter { it.startsWith("scope ") }
        assertEquals(
            listOf(
                "scope memory cluster: BACKEND_SCOPE Coordination(\"default\") requires scope 'cluster', but the memory store " +
                    "reaches only scope 'process' in environment 'production'. Use a Redis or PostgreSQL backend, or pass " +
                    "requires= to say what reach you want.",
                "scope memory process: ok",
                "scope sqlite host: ok",
                "scope undeclared: ok",
                "scope declared host: BACKEND_SCOPE",
            ),
            lines.map { if (it.startsWith("scope declared host")) it.substringBefore(" Coordination") else it },
            "the verdicts (child output: $output)",
        )
    }
}

/** The child JVM of the GREL_ENVIRONMENT test: one line per Coordination it tries to make. */
object ScopeCheck {
    @JvmStatic
    fun main(args: Array<String>) = check()
}

private fun check() {
    fun attempt(what: String, make: () -> Coordination) {
        val outcome = try {
            make()
            "ok"
        } catch (e: TenureException) {
            "${e.code} ${e.message}"
        }
        println("scope $what: $outcome")
    }
    runBlocking {
        val sqlite = Store.open("sqlite://${kotlin.io.path.createTempDirectory("tenure-scope")}/scope.db")
        attempt("memory cluster") { Coordination(Store.memory()) }
        attempt("memory process") { Coordination(Store.memory(), requires = "process") }
        attempt("sqlite host") { Coordination(sqlite, requires = "host") }
        attempt("undeclared") { Coordination(Store.custom(locks = MapBackend())) }
        attempt("declared host") { Coordination(Store.custom(locks = MapBackend(), scope = "host")) }
        sqlite.close()
    }
    check(BackendScopeException::class.java.superclass == TenureException::class.java) { "BackendScopeException's parent" }
    exitProcess(0)
}
