// Locks on every store, written the way Kotlin users write them.
package tenure.test

import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import tenure.Lock
import tenure.LockOptions

fun lockTests(suite: Suite) {
    for (kind in Stores.kinds) {
        suite.test("$kind: a lock cycle gives strictly increasing fencing tokens") {
            val store = Stores.of(kind)
            val lock = Lock(Stores.fresh("cycle"), store, LockOptions(leaseDuration = 5.seconds, retryInterval = 10.milliseconds))
            val fences = mutableListOf<Long>()
            repeat(3) {
                val guard = lock.acquire(timeout = 5.seconds)
                check(guard.isValid) { "a fresh guard is not valid" }
                check(guard.owned()) { "a fresh guard is not owned" }
                check(lock.locked()) { "held, but not locked" }
                fences += guard.fencingToken
                guard.release()
                check(!lock.locked()) { "released, but locked" }
            }
            checkIncreasing(fences)
        }
    }
}
