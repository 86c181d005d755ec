// A program that returns from main while Tenure works in the background: an election running
// (with a listener), a lock kept alive, an acquire waiting. The JVM must exit all the same.
// With `close`, it closes the election first, which must release leadership at once.
// Usage: java … tenure.test.ExitKt STORE_URL NAME return|close
package tenure.test

import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.GlobalScope
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import tenure.ElectionOptions
import tenure.LeaderElection
import tenure.Lock
import tenure.LockOptions
import tenure.Store

fun main(args: Array<String>) = runBlocking {
    val (url, name, mode) = args
    val store = Store.open(url)
    val election = LeaderElection(name, store, ElectionOptions(leaseDuration = 30.seconds, renewDeadline = 20.seconds, retryInterval = 100.milliseconds))
    election.start { leading -> System.err.println("exit: leading=$leading") }
    election.waitForLeader()
    val lock = Lock("$name-lock", store, LockOptions(leaseDuration = 1.seconds))
    lock.acquire().keepAlive()
    @OptIn(kotlinx.coroutines.DelicateCoroutinesApi::class)
    GlobalScope.launch { lock.acquire() } // waits for a lock this process keeps: forever
    if (mode == "close") election.close()
    println("exit: returning from main, leading=${election.isLeader}")
}
