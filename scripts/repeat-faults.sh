#!/usr/bin/env bash
# Runs every fault and chaos test N times in a row (default 10) and counts, per test, how many
# runs passed: Redis (kill -9, SIGSTOP and restart of servers the tests start, the dialed
# connection), Redis Sentinel (failovers, the chaos run), Redis replicas (min_replicas, a
# failover), PostgreSQL (initdb clusters killed, stopped, frozen), etcd (three-member clusters,
# and the conformance suite's freeze and kill cases). A test that fails once in N is flaky: fix
# the test or the code, never retry it. Needs what the rust stage of scripts/test.sh starts.
# FILTERSET (nextest's) runs other tests instead: 'all()' is the whole rust stage, where the
# fault tests share the machine with every other test, as in CI.
# Usage: scripts/repeat-faults.sh [N [FILTERSET]]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
filter=${2:-'(package(tenure-redis) & (binary(faults) | binary(chaos) | binary(sentinel) | binary(replicas) | binary(dialed)))
  | (package(tenure-postgres) & binary(faults))
  | (package(tenure-etcd) & (binary(faults) | (binary(conformance) & test(/frozen|freeze|kill|crash/))))'}
cargo nextest run --workspace -E "$filter" --no-run
mkdir -p target/repeat-faults
failed=0
for i in $(seq "$runs"); do
  start=$SECONDS
  status=ok
  cargo nextest run --workspace -E "$filter" --final-status-level none > "target/repeat-faults/$i.log" 2>&1 || { status=FAILED; failed=$((failed + 1)); }
  echo "run $i: $status in $((SECONDS - start)) s ($(grep -cE '^ *(PASS|LEAK) \[' "target/repeat-faults/$i.log") passed)"
done
echo
# Per test: runs passed / runs, from each test's final line in every log (PASS or LEAK passed;
# FAIL, TIMEOUT, SIGSEGV, ABORT and the like did not).
cat target/repeat-faults/*.log | awk '
  /^ *[A-Z][A-Z0-9-]* \[ *[0-9.]+s\] \( *[0-9]+\/[0-9]+\) / {
    outcome = $1; sub(/^ *[A-Z][A-Z0-9-]* \[ *[0-9.]+s\] \( *[0-9]+\/[0-9]+\) /, "")
    runs[$0]++; if (outcome == "PASS" || outcome == "LEAK") passed[$0]++ }
  END { for (t in runs) printf "%3d/%-3d %s\n", passed[t], runs[t], t }' | sort -k2
echo
echo "$((runs - failed)) of $runs runs passed"
[ "$failed" = 0 ]
