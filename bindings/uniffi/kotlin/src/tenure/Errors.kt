// The errors of Tenure on the JVM: grelmicro's classes and hierarchy, as one sealed hierarchy
// of unchecked exceptions. Every one has a stable `code`; one about a lock or election has its
// name in `lockName`; a store's failure behind it is its `cause` (a `StoreException`).
// Messages never contain an ownership token or a password.
package tenure

import tenure.ffi.StoreFailure
import tenure.ffi.TenureException as Ffi

/** Anything Tenure throws. */
sealed class TenureException(message: String, val code: String, val lockName: String? = null, cause: Throwable? = null) :
    RuntimeException(message, cause)

/** A store failed or could not be reached: `code` is `STORE_TIMEOUT`, `STORE_UNAVAILABLE`, … */
class StoreException internal constructor(message: String, code: String) : TenureException(message, code)

/** A setting, name, URL or environment variable is invalid; `field` names it. */
class SettingsValidationException internal constructor(message: String, val field: String?) :
    TenureException(message, "SETTINGS_INVALID")

/** No store could be resolved. */
class OutOfContextException internal constructor(message: String) : TenureException(message, "OUT_OF_CONTEXT")

/** A store was used before it was opened or after it was closed. */
class BackendNotOpenException internal constructor(message: String) : TenureException(message, "BACKEND_NOT_OPEN")

/** A blocking call was made on a thread of Tenure's own runtime (inside a listener), which it would stall. */
class EventLoopDeadlockException internal constructor(message: String) :
    TenureException(message, "EVENT_LOOP_DEADLOCK")

/** grelmicro's `CoordinationError`. */
sealed class CoordinationException(message: String, code: String, lockName: String?, cause: Throwable? = null) :
    TenureException(message, code, lockName, cause)

class CoordinationBackendException internal constructor(message: String) :
    CoordinationException(message, "COORDINATION_BACKEND_MISSING", null)

class LockReentrantException internal constructor(message: String, name: String) :
    CoordinationException(message, "LOCK_REENTRANT", name)

class LockUpgradeException internal constructor(message: String, name: String) :
    CoordinationException(message, "LOCK_UPGRADE", name)

class LockBusyException internal constructor(message: String, name: String) :
    CoordinationException(message, "LOCK_BUSY", name)

/** Released already, lost, or never held. */
class LockNotOwnedException internal constructor(message: String, name: String) :
    CoordinationException(message, "LOCK_NOT_OWNED", name)

/** grelmicro's `LockBackendError`: the store failed during a lock operation (the `cause`). */
sealed class LockBackendException(message: String, code: String, name: String, cause: StoreException) :
    CoordinationException(message, code, name, cause)

class LockAcquireException internal constructor(message: String, name: String, cause: StoreException) :
    LockBackendException(message, "LOCK_ACQUIRE_FAILED", name, cause)

class LockExtendException internal constructor(message: String, name: String, cause: StoreException) :
    LockBackendException(message, "LOCK_EXTEND_FAILED", name, cause)

class LockReleaseException internal constructor(message: String, name: String, cause: StoreException) :
    LockBackendException(message, "LOCK_RELEASE_FAILED", name, cause)

class LockLockedCheckException internal constructor(message: String, name: String, cause: StoreException) :
    LockBackendException(message, "LOCK_LOCKED_CHECK_FAILED", name, cause)

class LockOwnedCheckException internal constructor(message: String, name: String, cause: StoreException) :
    LockBackendException(message, "LOCK_OWNED_CHECK_FAILED", name, cause)

/** grelmicro's `AdmissionError`. */
sealed class AdmissionException(message: String, code: String, lockName: String?) :
    TenureException(message, code, lockName)

/** A call that does not wait was turned away (the lock is taken, or this worker does not lead). */
open class WouldBlockException internal constructor(message: String, name: String, code: String = "WOULD_BLOCK") :
    AdmissionException(message, code, name)

/** Not acquired within `timeout`. */
class LockTimeoutException internal constructor(message: String, name: String, val timeout: kotlin.time.Duration) :
    WouldBlockException(message, name, "LOCK_TIMEOUT")

private fun store(s: StoreFailure) = StoreException(s.reason, s.code)

/** The exception of this package that `e` stands for. */
internal fun Ffi.mapped(): TenureException = when (this) {
    is Ffi.CoordinationBackend -> CoordinationBackendException(reason)
    is Ffi.LockReentrant -> LockReentrantException(reason, name)
    is Ffi.LockUpgrade -> LockUpgradeException(reason, name)
    is Ffi.LockBusy -> LockBusyException(reason, name)
    is Ffi.LockNotOwned -> LockNotOwnedException(reason, name)
    is Ffi.LockAcquire -> LockAcquireException(reason, name, store(store))
    is Ffi.LockExtend -> LockExtendException(reason, name, store(store))
    is Ffi.LockRelease -> LockReleaseException(reason, name, store(store))
    is Ffi.LockLockedCheck -> LockLockedCheckException(reason, name, store(store))
    is Ffi.LockOwnedCheck -> LockOwnedCheckException(reason, name, store(store))
    is Ffi.WouldBlock -> WouldBlockException(reason, name)
    is Ffi.LockTimeout -> LockTimeoutException(reason, name, timeout.toSeconds())
    is Ffi.OutOfContext -> OutOfContextException(reason)
    is Ffi.SettingsValidation -> SettingsValidationException(reason, field)
    is Ffi.BackendNotOpen -> BackendNotOpenException(reason)
    is Ffi.EventLoopDeadlock -> EventLoopDeadlockException(reason)
    is Ffi.Store -> store(store)
}

/** `block`'s result, with a failure of the native layer thrown as this package's exception. */
internal inline fun <T> call(block: () -> T): T =
    try {
        block()
    } catch (e: Ffi) {
        throw e.mapped()
    }
