// The driver's metrics and spans through a TelemetryListener, as a Kotlin or Java program bridges
// them to its metrics library; the leader health check.
package tenure.test

import com.sun.net.httpserver.HttpServer
import java.net.HttpURLConnection
import java.net.InetSocketAddress
import java.net.URI
import java.util.Collections
import kotlin.time.Duration.Companion.seconds
import tenure.LeaderElection
import tenure.Lock
import tenure.TelemetryListener
import tenure.TenureTelemetry
import tenure.ffi.TelemetryAttribute
import tenure.ffi.TelemetryMeasurement
import tenure.ffi.TelemetrySpan

private fun List<TelemetryAttribute>.has(key: String, value: String) = any { it.key == key && it.value == value }

/** What the observable [instrument] reports now for [name]. */
private fun observed(instrument: String, name: String) =
    TenureTelemetry.observe(instrument).firstOrNull { it.attributes.has("name", name) }?.value

fun telemetryTests(suite: Suite) {
    suite.test("memory: a lock cycle reaches a TelemetryListener as measurements and spans; holders and fences are observed") {
        val measurements = Collections.synchronizedList(mutableListOf<TelemetryMeasurement>())
        val spans = Collections.synchronizedList(mutableListOf<TelemetrySpan>())
        TenureTelemetry.listen(object : TelemetryListener {
            override fun measurement(measurement: TelemetryMeasurement) {
                measurements += measurement
            }

            override fun span(span: TelemetrySpan) {
                spans += span
            }
        })
        try {
            val name = Stores.fresh("telemetry")
            val guard = Lock(name, Stores.of("memory")).acquire()
            val fence = guard.fencingToken
            check(observed("tenure.lock.holders", name) == 1.0) { "the lease is counted among the holders" }
            guard.release()
            check(observed("tenure.lock.holders", name) == 0.0) { "and leaves them once released" }
            check(observed("tenure.lock.fence", name) == fence.toDouble())
            eventually(what = "the acquire's duration, by outcome") {
                synchronized(measurements) {
                    measurements.any {
                        it.instrument.name == "tenure.lock.acquire.duration" && it.instrument.kind == "histogram" &&
                            it.attributes.has("name", name) && it.attributes.has("outcome", "acquired")
                    }
                }
            }
            eventually(what = "the acquire, hold and release spans with the fence") {
                synchronized(spans) {
                    val ours = spans.filter { it.attributes.has("name", name) }
                    ours.map { it.name } == listOf("tenure.acquire", "tenure.hold", "tenure.release") &&
                        ours.all { it.attributes.has("fence", fence.toString()) && it.startNanos <= it.endNanos }
                }
            }
        } finally {
            TenureTelemetry.stop()
        }
    }

    suite.test("memory: a leading election is healthy and reported as the leader; a bad tolerance is refused") {
        val name = Stores.fresh("telemetry-election")
        TenureTelemetry.listen(object : TelemetryListener {
            override fun measurement(measurement: TelemetryMeasurement) = Unit

            override fun span(span: TelemetrySpan) = Unit
        })
        try {
            LeaderElection(name, Stores.of("memory"), fastElection("memory")).use { election ->
                election.start()
                eventually(what = "leadership") { election.isLeader }
                check(election.health() == null) { "a leader renewing on time is healthy" }
                eventually(what = "the leader gauge at 1") { observed("tenure.election.leader", name) == 1.0 }
                val refused = runCatching { election.health(java.time.Duration.ofSeconds(-1)) }.exceptionOrNull()
                check(refused is tenure.SettingsValidationException) { "a negative tolerance: $refused" }
            }
        } finally {
            TenureTelemetry.stop()
        }
    }

    suite.test("memory: a health route (the JDK's HttpServer) answers 200 while the election renews") {
        LeaderElection(Stores.fresh("health-route"), Stores.of("memory"), fastElection("memory")).use { election ->
            election.start()
            eventually(what = "leadership") { election.isLeader }
            // What a service writes (a Spring Boot HealthIndicator holds the same two lines).
            val server = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0)
            server.createContext("/healthz") { exchange ->
                val reason = election.health(10.seconds)
                val body = (reason ?: "ok").toByteArray()
                exchange.sendResponseHeaders(if (reason == null) 200 else 503, body.size.toLong())
                exchange.responseBody.use { it.write(body) }
            }
            server.start()
            try {
                val url = URI.create("http://127.0.0.1:${server.address.port}/healthz").toURL()
                val connection = url.openConnection() as HttpURLConnection
                check(connection.responseCode == 200) { "GET /healthz answered ${connection.responseCode}" }
                val body = connection.inputStream.bufferedReader().use { it.readText() }
                check(body == "ok") { "GET /healthz said $body" }
            } finally {
                server.stop(0)
            }
        }
    }
}
