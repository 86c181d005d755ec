package tenure

import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.isActive
import kotlinx.coroutines.withContext

/**
 * [body]'s result, with [end] run after it however it ends (an exception, a cancellation): a
 * failure of [end] is thrown, or added as suppressed to the body's own. [end] runs even in a
 * cancelled coroutine, so a lock is released before the cancellation goes on (a cancellation
 * that comes while [end] runs leaves the driver to finish it in the background).
 */
internal suspend inline fun <T> ending(crossinline end: suspend () -> Unit, body: () -> T): T {
    var failed: Throwable? = null
    try {
        return body()
    } catch (e: Throwable) {
        failed = e
        throw e
    } finally {
        try {
            // NonCancellable costs a context switch: only where it is needed.
            if (currentCoroutineContext().isActive) end() else withContext(NonCancellable) { end() }
        } catch (e: Throwable) {
            failed?.addSuppressed(e) ?: throw e
        }
    }
}
