// The driver's events through java.util.logging's `tenure` logger, on every store.
package tenure.test

import java.util.Collections
import java.util.logging.Handler
import java.util.logging.Level
import java.util.logging.LogRecord
import tenure.LeaderElection
import tenure.Lock
import tenure.TenureLogging

/** [body] with every record of the `tenure` logger collected. */
internal suspend fun collecting(body: suspend (records: List<LogRecord>) -> Unit) {
    val records = Collections.synchronizedList(mutableListOf<LogRecord>())
    val handler = object : Handler() {
        override fun publish(record: LogRecord) {
            records += record
        }

        override fun flush() = Unit

        override fun close() = Unit
    }
    TenureLogging.logger.addHandler(handler)
    try {
        body(records)
    } finally {
        TenureLogging.logger.removeHandler(handler)
    }
}

private fun List<LogRecord>.has(level: Level, message: String, field: String) =
    synchronized(this) { any { it.level == level && it.message.startsWith(message) && field in (it.parameters ?: emptyArray()) } }

fun loggingTests(suite: Suite) {
    for (kind in Stores.kinds) {
        suite.test("$kind: leadership gained and released reach java.util.logging at INFO, with the election's name") {
            collecting { records ->
                val name = Stores.fresh("logged")
                LeaderElection(name, Stores.of(kind), fastElection(kind)).use { election ->
                    election.start()
                    eventually(what = "leadership") { election.isLeader }
                    eventually(what = "an INFO record of it") { records.has(Level.INFO, "acquired leadership", "election=$name") }
                }
                eventually(what = "an INFO record of the release") { records.has(Level.INFO, "released leadership", "election=$name") }
                check(records.none { it.level == Level.FINE }) { "FINE records while the logger is at INFO" }
            }
        }
    }

    suite.test("memory: every acquire and release at FINE once the logger is loggable at FINE and refreshed") {
        collecting { records ->
            TenureLogging.logger.level = Level.FINE
            TenureLogging.refresh()
            try {
                val name = Stores.fresh("fine")
                val guard = Lock(name, Stores.of("memory")).acquire()
                guard.release()
                eventually(what = "a FINE record of the acquire") { records.has(Level.FINE, "lock acquired", "lock=$name") }
                eventually(what = "a FINE record of the release") { records.has(Level.FINE, "lock released", "lock=$name") }
                check(records.none { r -> r.parameters.orEmpty().any { (it as String).startsWith("token=") } }) { "a record carries an ownership token" }
            } finally {
                TenureLogging.logger.level = null
                TenureLogging.refresh()
            }
        }
    }
}
