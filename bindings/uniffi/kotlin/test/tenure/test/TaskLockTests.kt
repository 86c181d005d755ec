// Task locks on every store: at most one run per window, ShedLock's `lockAtLeastFor`.
package tenure.test

import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.delay
import tenure.LockNotOwnedException
import tenure.LockReentrantException
import tenure.TaskLock
import tenure.TaskLockOptions
import tenure.WouldBlockException

fun taskLockTests(suite: Suite) {
    for (kind in Stores.kinds) {
        suite.test("$kind: a task runs once per window across replicas") {
            val name = Stores.fresh("task")
            val hold = if (kind == "etcd") 2.seconds else 500.milliseconds
            val options = TaskLockOptions(minHoldDuration = hold, leaseDuration = 10.seconds)
            val replicas = (1..3).map { TaskLock(name, Stores.of(kind), options) }
            val ran = replicas.map { replica -> replica.runOnce { token -> token } }
            val fences = ran.filterNotNull()
            assertEquals(1, fences.size, "runs in one window")
            check(replicas[0].locked()) { "the window's minimum hold is not kept" }
            delay(outlast(kind, hold) + 100.milliseconds)
            val again = replicas[1].runOnce { token -> token }
            check(again != null && again > fences[0]) { "the next window's run: $again after ${fences[0]}" }
        }

        suite.test("$kind: enter refuses a second run, and the same instance's nested one") {
            val name = Stores.fresh("enter")
            val task = TaskLock(name, Stores.of(kind), TaskLockOptions(minHoldDuration = 100.milliseconds))
            val run = task.enter()
            check(run.isValid) { "a fresh run is not valid" }
            run.extend()
            val e = assertThrows<WouldBlockException> { TaskLock(name, Stores.of(kind)).enter() }
            assertEquals(name, e.lockName, "lock name")
            assertThrows<LockReentrantException> { task.enter() }
            run.exit()
            check(!run.isValid) { "valid after exit" }
            assertThrows<LockNotOwnedException> { run.exit() }
            run.close()
        }
    }
}
