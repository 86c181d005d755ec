"""Makes uniffi's generated Kotlin reuse its call-status structure instead of allocating one per call.

uniffi 0.32's Kotlin layer passes every call a fresh `UniffiRustCallStatus`, a JNA `Structure`:
each one allocates native memory registered with JNA's cleaner and lays its fields out by
reflection, which measured here as most of a call's cost (about 18 us of a trivial call's 20 on
this machine). This keeps a few per thread and reuses them (a call made while another runs on
the same thread, from a callback, takes its own). It edits one function of the generated file
and fails if that function is not there as expected (a uniffi upgrade must look again).

Usage: python3 pooled_status.py GENERATED.kt
"""

import sys

ORIGINAL = """private inline fun <U, E: kotlin.Exception> uniffiRustCallWithError(errorHandler: UniffiRustCallStatusErrorHandler<E>, callback: (UniffiRustCallStatus) -> U): U {
    var status = UniffiRustCallStatus()
    val return_value = callback(status)
    uniffiCheckCallStatus(errorHandler, status)
    return return_value
}
"""

POOLED = """private inline fun <U, E: kotlin.Exception> uniffiRustCallWithError(errorHandler: UniffiRustCallStatusErrorHandler<E>, callback: (UniffiRustCallStatus) -> U): U {
    val status = UniffiCallStatusPool.take()
    try {
        val return_value = callback(status)
        uniffiCheckCallStatus(errorHandler, status)
        return return_value
    } finally {
        UniffiCallStatusPool.give(status)
    }
}

/** Call statuses kept per thread for reuse (see bindings/uniffi/kotlin/pooled_status.py). */
internal object UniffiCallStatusPool {
    private val free = ThreadLocal.withInitial { ArrayList<UniffiRustCallStatus>(2) }

    fun take(): UniffiRustCallStatus {
        val pool = free.get()
        val status = if (pool.isEmpty()) UniffiRustCallStatus() else pool.removeAt(pool.size - 1)
        // Rust writes the error buffer only with an error code, and it is read only then.
        status.code = UNIFFI_CALL_SUCCESS
        return status
    }

    fun give(status: UniffiRustCallStatus) {
        val pool = free.get()
        if (pool.size < 4) pool.add(status)
    }
}
"""


def main():
    path = sys.argv[1]
    text = open(path).read()
    if text.count(ORIGINAL) != 1:
        sys.exit(f"{path}: uniffiRustCallWithError is not the one pooled_status.py knows; look at it again")
    open(path, "w").write(text.replace(ORIGINAL, POOLED))


if __name__ == "__main__":
    main()
