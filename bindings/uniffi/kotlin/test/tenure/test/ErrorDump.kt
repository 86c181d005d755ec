// The JVM half of the cross-binding error test (tests/interop/errors.py): raises the core's
// example error of every code given, through the package as a user meets it, and prints what
// a user sees, one JSON object per line: the class, its chain of Tenure classes up to
// TenureException, the message, the code and the class's fields.
package tenure.test

import tenure.ErrorTable
import tenure.LockLostException
import tenure.LockTimeoutException
import tenure.SettingsValidationException
import tenure.StoreException
import tenure.TenureException

private fun text(value: String) = buildString {
    append('"')
    for (c in value) {
        when {
            c == '"' || c == '\\' -> append('\\').append(c)
            c < ' ' -> append("\\u%04x".format(c.code))
            else -> append(c)
        }
    }
    append('"')
}

private fun chain(e: Throwable): List<String> =
    generateSequence<Class<*>>(e.javaClass) { it.superclass }
        .takeWhile { it != RuntimeException::class.java }
        .map { it.simpleName }
        .toList()

fun main(args: Array<String>) {
    if (args.firstOrNull() == "--table") {
        println(ErrorTable.json())
        return
    }
    for (code in args) {
        val e = try {
            ErrorTable.raiseExample(code)
            null
        } catch (e: TenureException) {
            e
        } ?: error("$code was not raised")
        val fields = buildList {
            e.lockName?.let { add("\"name\":${text(it)}") }
            if (e is LockTimeoutException) add("\"timeout\":${e.timeout.inWholeMilliseconds / 1000.0}")
            if (e is SettingsValidationException) e.field?.let { add("\"field\":${text(it)}") }
            (e.cause as? StoreException)?.let { add("\"store\":${text(it.code)}") }
            if (e is LockLostException) add("\"reason\":${text(e.reason)}")
        }
        val chain = chain(e).joinToString(",") { text(it) }
        println(
            "{\"code\":${text(code)},\"own_code\":${text(e.code)},\"class\":${text(e.javaClass.simpleName)}," +
                "\"chain\":[$chain],\"message\":${text(e.message ?: "")},\"fields\":{${fields.joinToString(",")}}}",
        )
    }
}
