// Leader elections on every store: one leader, a hand-over on stop or close, listeners, lead { }.
package tenure.test

import java.util.Collections
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.TimeSource
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.withTimeout
import tenure.ElectionOptions
import tenure.LeaderElection

fun fastElection(kind: String) = ElectionOptions(
    leaseDuration = if (kind == "etcd") 3.seconds else 2.seconds,
    renewDeadline = if (kind == "etcd") 2.seconds else 1.seconds,
    retryInterval = 50.milliseconds,
    backendTimeout = 500.milliseconds,
)

fun electionTests(suite: Suite) {
    for (kind in Stores.kinds) {
        suite.test("$kind: each term has a fencing token above the last") {
            val name = Stores.fresh("terms")
            val (a, b) = (1..2).map { LeaderElection(name, Stores.of(kind), fastElection(kind)) }
            check(a.fencingToken == null) { "a token before leading" }
            a.start()
            eventually(what = "a to lead") { a.isLeader }
            val first = a.fencingToken ?: error("a leads without a fencing token")
            b.start()
            delay(300)
            check(b.fencingToken == null) { "a follower has a token" }
            assertEquals(first, a.fencingToken, "the term's token after renewals")
            a.stop()
            check(a.fencingToken == null) { "a stopped election has a token" }
            eventually(what = "b to lead") { b.isLeader }
            val second = b.fencingToken ?: error("b leads without a fencing token")
            check(second > first) { "the next term's token $second is not above $first" }
            listOf(a, b).forEach { it.close() }
        }

        suite.test("$kind: one leader among several elections, and a hand-over on stop") {
            val name = Stores.fresh("elect")
            val elections = (1..3).map { i ->
                LeaderElection(name, Stores.of(kind), fastElection(kind).copy(metadata = mapOf("pod" to "pod-$i")))
            }
            val heard = Collections.synchronizedList(mutableListOf<Pair<Int, Boolean>>())
            elections.forEachIndexed { i, e -> check(e.start { leading -> heard += i to leading }) { "did not start" } }
            check(!elections[0].start()) { "a second start started" }
            eventually(what = "a leader") { elections.count { it.isLeader } == 1 }
            delay(300)
            assertEquals(1, elections.count { it.isLeader }, "leaders")
            val leader = elections.single { it.isLeader }
            val i = elections.indexOf(leader)
            val record = leader.record ?: error("no record")
            assertEquals(leader.worker, record.holder, "the record's holder")
            assertEquals(mapOf("pod" to "pod-${i + 1}"), record.metadata, "the record's metadata")
            check(leader.isLeaderConfirmedWithin(5.seconds)) { "not confirmed within 5 s" }
            eventually(what = "the listener to hear the lead") { heard.contains(i to true) }

            val start = TimeSource.Monotonic.markNow()
            leader.stop()
            check(!leader.isLeader && !leader.isRunning) { "still leading or running after stop" }
            eventually(what = "a new leader") { elections.count { it.isLeader } == 1 }
            val handOver = start.elapsedNow()
            check(handOver < fastElection(kind).leaseDuration!!) { "the hand-over took $handOver: the stop did not release" }
            eventually(what = "the listener to hear the loss") { heard.contains(i to false) }
            val next = elections.single { it.isLeader }
            eventually(what = "the new leader's record") { next.record?.holder == next.worker }
            check(next.worker != leader.worker) { "the stopped leader leads again" }
            elections.forEach { it.close() }
            val told = heard.filter { it.first == i }.map { it.second }
            assertEquals(listOf(true, false), told.take(2), "what the stopped leader's listener heard")
        }
    }

    suite.test("memory: lead { } runs while leading, and is cancelled the moment leadership is lost") {
        val election = LeaderElection(Stores.fresh("lead"), Stores.of("memory"), fastElection("memory"))
        election.start()
        assertEquals("done", election.lead { "done" }, "the block's value")
        val cancelled = CompletableDeferred<Boolean>()
        coroutineScope {
            val leading = async {
                election.lead {
                    try {
                        awaitCancellation()
                    } finally {
                        cancelled.complete(true)
                    }
                }
            }
            delay(100)
            election.stop()
            assertEquals(null, withTimeout(5.seconds) { leading.await() }, "lead's value after a loss")
        }
        check(cancelled.isCompleted) { "the block was not cancelled" }
        election.close()
    }

    suite.test("memory: lead(repeat = true) runs again after each completion") {
        val election = LeaderElection(Stores.fresh("repeat"), Stores.of("memory"), fastElection("memory"))
        election.start()
        var runs = 0
        val result = runCatching {
            withTimeout(2.seconds) {
                election.lead(repeat = true) {
                    runs++
                    if (runs == 3) error("third run")
                }
            }
        }
        assertEquals("third run", result.exceptionOrNull()?.message, "what ended the loop")
        assertEquals(3, runs, "runs")
        election.close()
    }

    suite.test("redis: close() releases at once, and the blocking waits time out") {
        val name = Stores.fresh("close")
        val first = LeaderElection(name, Stores.of("redis"), fastElection("redis").copy(leaseDuration = 30.seconds, renewDeadline = 20.seconds))
        first.start()
        check(first.waitForLeaderBlocking(java.time.Duration.ofSeconds(10))) { "did not lead" }
        val second = LeaderElection(name, Stores.of("redis"), fastElection("redis"))
        second.start()
        check(!second.waitForLeaderBlocking(java.time.Duration.ofMillis(300))) { "led beside the first" }
        val start = TimeSource.Monotonic.markNow()
        first.close()
        check(second.waitForLeaderBlocking(java.time.Duration.ofSeconds(10))) { "no hand-over after close" }
        check(start.elapsedNow() < 5.seconds) { "the hand-over took ${start.elapsedNow()} of a 30 s lease" }
        second.stopBlocking()
        check(second.waitLoseLeaderBlocking(java.time.Duration.ofSeconds(1))) { "leading after stop" }
        second.close()
    }
}
