// Durations as the native layer takes them: seconds in a Double, which the Rust core checks (NaN,
// infinite, zero, negative and past-100-years values are a SettingsValidationException naming
// the setting). Nothing is checked here: a binding converts, it decides nothing.
package tenure

import kotlin.time.Duration
import kotlin.time.DurationUnit
import kotlin.time.toDuration

/** Seconds, `Duration.INFINITE` as infinity (which the core refuses, naming the setting). */
internal fun Duration.seconds(): Double = toDouble(DurationUnit.SECONDS)

internal fun Duration?.seconds(): Double? = this?.seconds()

/** Seconds of a `java.time.Duration`, to the nanosecond for any duration the core accepts. */
internal fun java.time.Duration.seconds(): Double = seconds.toDouble() + nano / 1e9

internal fun java.time.Duration?.seconds(): Double? = this?.seconds()

internal fun Double.toSeconds(): Duration = toDuration(DurationUnit.SECONDS)
