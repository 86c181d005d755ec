package tenure

import tenure.ffi.TelemetryInstrument
import tenure.ffi.TelemetryMeasurement
import tenure.ffi.TelemetryPoint
import tenure.ffi.TelemetrySink
import tenure.ffi.TelemetrySpan

/**
 * What a program does with the driver's metrics and spans: hand them to OpenTelemetry's Java API,
 * Micrometer, or a log. The driver decides every instrument, unit, bucket boundary and attribute
 * (docs/telemetry.md); a listener converts. Called on a thread of the package's own, a record at a
 * time, in order; a listener that throws loses that record only.
 */
interface TelemetryListener {
    /** A measurement: add it to a counter or up-down counter, record it in a histogram, or set a gauge, as [TelemetryInstrument.kind] says. */
    fun measurement(measurement: TelemetryMeasurement)

    /** A finished span (`tenure.acquire`, `tenure.hold`, `tenure.release`). */
    fun span(span: TelemetrySpan)
}

/**
 * The driver's metrics and spans for the JVM. No Maven repository is reachable where this package
 * is built, so it depends on no metrics library: [listen] takes a [TelemetryListener] (a Gradle
 * user bridging to OpenTelemetry adds `io.opentelemetry:opentelemetry-api` and writes the
 * adapter shown in docs/jvm.md). Events users act on (renewals failing, validity running low, a
 * lease lost and why) also reach `java.util.logging` through [TenureLogging].
 */
object TenureTelemetry {
    /** Every instrument the driver records, with its kind, unit, description and boundaries. */
    @JvmStatic
    val instruments: List<TelemetryInstrument> get() = tenure.ffi.telemetryInstruments()

    /** Hands the driver's measurements and spans to [listener] from now on (in place of any before). */
    @JvmStatic
    fun listen(listener: TelemetryListener) {
        tenure.ffi.listenTelemetry(object : TelemetrySink {
            override fun measurement(measurement: TelemetryMeasurement) = listener.measurement(measurement)

            override fun span(span: TelemetrySpan) = listener.span(span)
        })
    }

    /** Stops measuring. */
    @JvmStatic
    fun stop() = tenure.ffi.unlistenTelemetry()

    /**
     * The values now of the observable instrument [name] (`tenure.lock.holders`,
     * `tenure.lock.waiters`, `tenure.lock.fence`, `tenure.election.leader`): what an observable
     * instrument's callback reports when the host collects.
     */
    @JvmStatic
    fun observe(name: String): List<TelemetryPoint> = tenure.ffi.telemetryObserve(name)

    /** Reports at most [limit] distinct lock names; later ones as `_other` (default 1000). */
    @JvmStatic
    fun setNameLimit(limit: Int) = tenure.ffi.telemetrySetNameLimit(limit.toUInt())
}
