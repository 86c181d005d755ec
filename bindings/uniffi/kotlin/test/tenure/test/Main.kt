package tenure.test

import kotlin.system.exitProcess
import kotlinx.coroutines.runBlocking

fun main(args: Array<String>) {
    val suite = Suite()
    lockTests(suite)
    taskLockTests(suite)
    electionTests(suite)
    readWriteSemaphoreTests(suite)
    loggingTests(suite)
    errorTests(suite)
    firstLinesTests(suite)
    sentinelTests(suite)
    userBackendTests(suite)
    lossTests(suite)
    userReadWriteTests(suite)
    coordinationTests(suite)
    telemetryTests(suite)
    val failed = runBlocking { suite.run(args.firstOrNull()) }
    Stores.closeAll()
    exitProcess(if (failed == 0) 0 else 1)
}
