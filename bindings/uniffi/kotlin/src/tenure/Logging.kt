package tenure

import java.util.logging.Level
import java.util.logging.LogRecord
import java.util.logging.Logger
import tenure.ffi.ListenerException
import tenure.ffi.LogField
import tenure.ffi.LogSink

/**
 * The driver's events through `java.util.logging`, on the logger `tenure`: leadership gained,
 * released and stopped at `INFO`, a lost lock or leadership at `WARNING`, store failures at
 * `SEVERE`, and every acquire and release at `FINE` while the logger is loggable at `FINE`
 * (or `TENURE_LOG_DEBUG=1`) when the package loads or [refresh] runs. Each record's parameters
 * are its fields as `name=value` (`lock=orders`, `fence=3`); none carries an ownership token or
 * a password. Installed when the package loads; route it with any JUL handler or bridge
 * (SLF4J's `jul-to-slf4j`).
 */
object TenureLogging {
    /** The logger every record goes to. */
    @JvmField
    val logger: Logger = Logger.getLogger("tenure")

    private val sink = object : LogSink {
        override fun record(level: String, message: String, fields: List<LogField>, line: String) {
            val julLevel = when (level) {
                "error" -> Level.SEVERE
                "warn" -> Level.WARNING
                "info" -> Level.INFO
                else -> Level.FINE
            }
            if (!logger.isLoggable(julLevel)) return
            val record = LogRecord(julLevel, line)
            record.loggerName = logger.name
            // The event comes from Tenure's driver, not from the method that forwards it.
            record.sourceClassName = logger.name
            record.sourceMethodName = null
            record.parameters = fields.map { "${it.name}=${it.value}" }.toTypedArray()
            logger.log(record)
        }
    }

    /** Reads the logger's level again: `FINE` events are forwarded while it is loggable at `FINE`. */
    @JvmStatic
    fun refresh() {
        val debug = logger.isLoggable(Level.FINE) || System.getenv("TENURE_LOG_DEBUG") == "1"
        tenure.ffi.listenLogs(sink, debug)
    }

    internal fun install() = Unit

    init {
        refresh()
    }
}
