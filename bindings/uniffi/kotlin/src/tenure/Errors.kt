// The errors of Tenure on the JVM: grelmicro's classes and hierarchy, as one sealed hierarchy
// of unchecked exceptions: the classes of the core's error table (tenure_core::error::table),
// which the native layer names for every failure. A cross-binding test checks every class, its
// parents and its fields against the table (tests/interop/errors.py). Every one has a stable
// `code`; one about a lock or election has its name in `lockName`; a store's failure behind it
// is its `cause` (a `StoreException`). Messages never contain an ownership token or a password.
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

/**
 * A store reaches less far (`process`, `host`) than its [Coordination] requires, where
 * `GREL_ENVIRONMENT` is `staging` or `production`.
 */
class BackendScopeException internal constructor(message: String) : TenureException(message, "BACKEND_SCOPE")

/** No store could be resolved. */
open class OutOfContextException internal constructor(message: String, code: String = "OUT_OF_CONTEXT") :
    TenureException(message, code)

/** A store was used before it was opened or after it was closed. */
class BackendNotOpenException internal constructor(message: String) : OutOfContextException(message, "BACKEND_NOT_OPEN")

/** A configuration of another primitive was given (grelmicro's `TypeError`). */
class ConfigTypeException internal constructor(message: String) : TenureException(message, "CONFIG_TYPE")

/** A blocking call was made on a thread of Tenure's own runtime (inside a listener), which it would stall. */
class EventLoopDeadlockException internal constructor(message: String) :
    TenureException(message, "EVENT_LOOP_DEADLOCK")

/** grelmicro's `CoordinationError`. */
sealed class CoordinationException(message: String, code: String, lockName: String?, cause: Throwable? = null) :
    TenureException(message, code, lockName, cause)

class CoordinationBackendException internal constructor(message: String) :
    CoordinationException(message, "COORDINATION_BACKEND_MISSING", null)

open class LockReentrantException internal constructor(message: String, name: String, code: String = "LOCK_REENTRANT") :
    CoordinationException(message, code, name)

/** Another operation of this holder is still in progress. */
class LockBusyException internal constructor(message: String, name: String) :
    LockReentrantException(message, name, "LOCK_BUSY")

class LockUpgradeException internal constructor(message: String, name: String) :
    CoordinationException(message, "LOCK_UPGRADE", name)

/** Released already, lost, or never held. */
open class LockNotOwnedException internal constructor(message: String, name: String, code: String = "LOCK_NOT_OWNED") :
    CoordinationException(message, code, name)

/**
 * The lease was lost while work ran under it, and the work was cancelled. `reason`: `expired` (it
 * ran out before a renewal was even tried: the process was paused), `unreachable` (renewals failed
 * or went unanswered until it ran out), `lost` (another holder has it), `fence_regression` (a
 * renewal answered a lower fencing token: the store lost its grants), `max_hold`, or `revoked` (an
 * operator ran `tenure revoke`; the message gives the reason).
 */
class LockLostException internal constructor(message: String, name: String, val reason: String) :
    LockNotOwnedException(message, name, "LOCK_LOST")

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

/** The exception of this package that `e` stands for: the class the core's table names. */
internal fun Ffi.mapped(): TenureException = when (this) {
    is Ffi.Store -> store(store)
    is Ffi.Failure -> byClass()
}

private fun Ffi.Failure.byClass(): TenureException {
    val lockName = name ?: ""
    val cause = store?.let(::store)
    fun backend(make: (String, String, StoreException) -> TenureException) =
        make(reason, lockName, cause ?: StoreException(reason, "STORE_FAILED"))
    return when (className) {
        "CoordinationBackend" -> CoordinationBackendException(reason)
        "LockReentrant" -> LockReentrantException(reason, lockName)
        "LockBusy" -> LockBusyException(reason, lockName)
        "LockUpgrade" -> LockUpgradeException(reason, lockName)
        "LockNotOwned" -> LockNotOwnedException(reason, lockName)
        "LockLost" -> LockLostException(reason, lockName, lost ?: "expired")
        "LockAcquire" -> backend(::LockAcquireException)
        "LockExtend" -> backend(::LockExtendException)
        "LockRelease" -> backend(::LockReleaseException)
        "LockLockedCheck" -> backend(::LockLockedCheckException)
        "LockOwnedCheck" -> backend(::LockOwnedCheckException)
        "WouldBlock" -> WouldBlockException(reason, lockName)
        "LockTimeout" -> LockTimeoutException(reason, lockName, (timeout ?: 0.0).toSeconds())
        "BackendScope" -> BackendScopeException(reason)
        "OutOfContext" -> OutOfContextException(reason)
        "BackendNotOpen" -> BackendNotOpenException(reason)
        "SettingsValidation" -> SettingsValidationException(reason, field)
        "ConfigType" -> ConfigTypeException(reason)
        "EventLoopDeadlock" -> EventLoopDeadlockException(reason)
        else -> throw IllegalStateException(
            "Tenure's native library reported $code as ${className}Exception, which this package does not " +
                "define: the library and the Kotlin classes come from different versions",
        )
    }
}

/** The core's table of error classes, which the exceptions above follow (the cross-binding error test's hooks). */
object ErrorTable {
    /** The table as JSON: every class, its code, its parent and its fields. */
    @JvmStatic
    fun json(): String = tenure.ffi.errorTable()

    /** Throws the core's example error of `code`, as this package throws it. */
    @JvmStatic
    fun raiseExample(code: String): Unit = call { tenure.ffi.raiseErrorExample(code) }
}

/** `block`'s result, with a failure of the native layer thrown as this package's exception. */
internal inline fun <T> call(block: () -> T): T =
    try {
        block()
    } catch (e: Ffi) {
        throw e.mapped()
    }
