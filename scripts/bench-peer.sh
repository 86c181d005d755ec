#!/usr/bin/env bash
# Tenure beside grelmicro 0.44, measured in the same run and reported as ratios:
#   - one task, acquire + release on the memory backend (tenure on tokio vs grelmicro's asyncio);
#   - one task, acquire + release on a SQLite file (synchronous=full, both libraries' default);
#   - on Redis: one task's cycle against two round trips of redis-benchmark, 8 tasks on one name
#     and on 8 names against grelmicro, a release's hand-off to the next waiter, a leader's
#     hand-over after a clean stop;
#   - the Python package on memory and on Redis beside grelmicro 0.44 (benches/peer/python_lock.py);
#   - on PostgreSQL: one task's cycle against `pgbench` running the same two statements, 8 tasks
#     on one name and on 8 names against grelmicro, a release's hand-off, a leader's hand-over.
#   - the npm package on Redis beside redis-semaphore's Mutex, redlock and the raw ioredis floor,
#     on memory, and 8 tasks on one name beside redis-semaphore (benches/peer/node/lock.mjs).
#   - read-write locks through the Python package beside grelmicro 0.44's on memory, SQLite, Redis
#     and PostgreSQL (benches/peer/python_rw.py); on Redis and PostgreSQL, 8 readers sharing one
#     name, a writer's wait behind readers, and a semaphore of 4 permits under 8 tasks
#     (benches/peer/python_contention.py).
# Usage: scripts/bench-peer.sh [redis|postgres|node|rw]   (one part only; builds the grelmicro venv on
# first use, about 1-2 min)
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash scripts/grelmicro-env.sh | tail -1)

part=${1:-all}
if [ "$part" = all ]; then
peer=$("$py" benches/peer/grelmicro_lock.py)
ours=$(cargo bench -q -p tenure-tokio --bench driver 2>/dev/null | sed -n 's/.*one task, acquire + release: *\([0-9]*\) ns.*/\1/p')
echo "one task, acquire + release (memory backend, median batch)"
echo "  grelmicro 0.44 (asyncio):  $peer ns per cycle"
echo "  tenure on tokio:           $ours ns per cycle"
awk -v p="$peer" -v o="$ours" 'BEGIN { printf "  tenure is %.0fx faster\n", p / o }'

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sqlite=$(cargo bench -q -p tenure-sqlite --bench sqlite 2>/dev/null)
for mode in full normal; do
  peer=$("$py" benches/peer/grelmicro_sqlite_lock.py "$dir" "$mode")
  ours=$(echo "$sqlite" | sed -n "s/.*synchronous=$mode: *tenure *\([0-9.]*\) us.*/\1/p")
  floor=$(echo "$sqlite" | sed -n "s/.*synchronous=$mode: .*floor *\([0-9.]*\) us.*/\1/p")
  echo "one task, acquire + release (SQLite file, synchronous=$mode, median batch)"
  echo "  grelmicro 0.44:            $peer us per cycle"
  echo "  tenure on tokio:           $ours us per cycle (floor: the same statements on one connection, $floor us)"
  awk -v p="$peer" -v o="$ours" 'BEGIN { printf "  tenure / grelmicro = %.2f\n", o / p }'
done
fi

if [ "$part" = all ] || [ "$part" = redis ]; then
# Redis: tenure's bench, grelmicro's and redis-benchmark's round trip, in this run.
server=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
hostport=${server#*://}; hostport=${hostport%%/*}; hostport=${hostport##*@}
rps=$(redis-benchmark -h "${hostport%:*}" -p "${hostport##*:}" -c 1 -n 20000 -q -t ping --csv 2>/dev/null \
  | awk -F'"' '/PING_MBULK/ { print $4 }')
rtt=$(awk -v r="$rps" 'BEGIN { printf "%.1f", 1e6 / r }')
redis=$(cargo bench -q -p tenure-redis --bench redis 2>/dev/null)
peer=$("$py" benches/peer/grelmicro_store_lock.py redis "$server")
field() { echo "$redis" | grep -v "current thread" | sed -n "s/.*$1 *\([0-9.]*\).*/\1/p"; }
single() { echo "$redis" | sed -n "s/.*$1, current thread: *\([0-9.]*\).*/\1/p"; }
peer_field() { echo "$peer" | sed -n "s/^$1 \([0-9.]*\)/\1/p"; }
one=$(field "one task, acquire + release:") contended=$(field "8 tasks on one name:") spread=$(field "8 tasks on 8 names:")
handoff=$(field "release to next waiter's grant:") handover=$(field "leader hand-over after a clean stop:")
echo "Redis ($server): one round trip by redis-benchmark (1 client, PING) $rtt us; the redis crate's own: $(field "client round trip (redis crate PING):") us"
awk -v o="$one" -v p="$(peer_field one)" -v r="$rtt" 'BEGIN {
  printf "  one task, acquire + release: tenure %.1f us = %.2f x two round trips (target <= 1.25); grelmicro %.1f us\n", o, o / (2 * r), p }'
awk -v o="$contended" -v p="$(peer_field contended)" -v f="$(field "fairness on one name (Jain's index):")" \
    -v g="$(peer_field fairness)" 'BEGIN {
  printf "  8 tasks on one name: tenure %.0f/s, grelmicro %.0f/s: %.1fx (target >= 4); Jain'"'"'s fairness index: tenure %.3f, grelmicro %.3f (target >= 0.95)\n", o, p, o / p, f, g }'
awk -v o="$spread" -v p="$(peer_field spread)" 'BEGIN {
  printf "  8 tasks on 8 names: tenure %.0f/s, grelmicro %.0f/s: %.1fx (target >= 5)\n", o, p, o / p }'
idle=$(field "client round trip after [0-9a-z]* idle:")
awk -v h="$handoff" -v r="$rtt" -v i="$idle" 'BEGIN {
  printf "  release to the next waiter'"'"'s grant: %.1f us = %.2f round trips; %.2f round trips made after the same 2 ms idle (%.1f us) (target <= 1.5)\n", h, h / r, h / i, i }'
awk -v h="$handover" 'BEGIN { printf "  leader hand-over after a clean stop: %.2f ms (target <= 20)\n", h / 1000 }'
crate=$(field "client round trip (redis crate PING):")
awk -v o="$one" -v s="$(field "the store's calls, acquire + release:")" -v c="$crate" 'BEGIN {
  printf "  against the redis crate'"'"'s own round trip (%.1f us): a cycle is %.2f x two of them (target <= 1.25); the store'"'"'s calls alone %.1f us = %.2f x\n", c, o / (2 * c), s, s / (2 * c) }'
awk -v c="$(single "client round trip (redis crate PING)")" -v o="$(single "one task, acquire + release")" \
    -v s="$(single "the store's calls, acquire + release")" -v h="$(single "release to next waiter's grant")" \
    -v i="$(single "client round trip after [0-9a-z]* idle")" 'BEGIN {
  printf "  on a current-thread runtime: round trip %.1f us, a cycle %.1f us = %.2f x two of them (target <= 1.25; the store'"'"'s calls alone %.2f x), a hand-off %.1f us = %.2f round trips back to back, %.2f made after the same idle (%.1f us)\n", c, o, o / (2 * c), s / (2 * c), h, h / c, h / i, i }'
awk -v o="$(single "8 tasks on one name")" -v p="$(peer_field contended)" -v f="$(single "fairness on one name (Jain's index)")" \
    -v n="$(single "8 tasks on 8 names")" -v q="$(peer_field spread)" 'BEGIN {
  printf "  on a current-thread runtime: 8 tasks on one name %.0f/s = %.1fx grelmicro (target >= 4), Jain'"'"'s index %.3f; 8 tasks on 8 names %.0f/s = %.1fx (target >= 5)\n", o, o / p, f, n, n / q }'

# Python: the tenure wheel (release) beside grelmicro 0.44 in grelmicro's Python 3.14 venv.
"$py" -m pip install -q "maturin>=1.16,<2"
"$(dirname "$py")/maturin" build --release -q -m bindings/python/Cargo.toml -o target/wheels-release
"$py" -m pip install -q --force-reinstall --no-deps target/wheels-release/tenure-*.whl
echo "Python, one task, async with lock (median batches; grelmicro 0.44 and tenure in one interpreter):"
"$py" benches/peer/python_lock.py "$server" | sed 's/^/  /'
fi

if [ "$part" = all ] || [ "$part" = postgres ]; then
# PostgreSQL: tenure's bench (with pgbench running Tenure's two statements) and grelmicro's, in this run.
pg=${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
postgres=$(cargo bench -q -p tenure-postgres --bench postgres 2>/dev/null)
peer=$("$py" benches/peer/grelmicro_store_lock.py postgres "$pg")
pfield() { echo "$postgres" | sed -n "s/.*$1 *\([0-9.]*\).*/\1/p"; }
peer_field() { echo "$peer" | sed -n "s/^$1 \([0-9.]*\)/\1/p"; }
floor=$(pfield "floor (the same statements, pgbench):")
echo "PostgreSQL ($pg): pgbench, one client, Tenure's acquire + release statements prepared: $floor us per cycle; the same through tokio-postgres: $(pfield "floor (the same statements, tokio-postgres):") us"
awk -v o="$(pfield "one task, acquire + release:")" -v p="$(peer_field one)" -v f="$floor" 'BEGIN {
  printf "  one task, acquire + release: tenure %.1f us = %.2f x pgbench (target <= 1.2); grelmicro %.1f us = %.2f x\n", o, o / f, p, p / f }'
awk -v o="$(pfield "8 tasks on one name:")" -v p="$(peer_field contended)" 'BEGIN {
  printf "  8 tasks on one name: tenure %.0f/s, grelmicro %.0f/s: %.1fx (target >= 2)\n", o, p, o / p }'
awk -v o="$(pfield "8 tasks on 8 names:")" -v p="$(peer_field spread)" 'BEGIN {
  printf "  8 tasks on 8 names: tenure %.0f/s, grelmicro %.0f/s: %.1fx\n", o, p, o / p }'
echo "  release to the next waiter's grant: $(pfield "release to next waiter's grant:") us; leader hand-over after a clean stop: $(pfield "leader hand-over after a clean stop:") us"
fi

if [ "$part" = all ] || [ "$part" = node ]; then
# Node: the release addon, and the peers from benches/peer/node's lockfile, in one process.
server=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
(cd bindings/node && npm ci --no-audit --no-fund --loglevel=error && npm run build > /dev/null 2>&1)
(cd benches/peer/node && npm ci --no-audit --no-fund --loglevel=error)
node=$(cd benches/peer/node && node lock.mjs "$PWD/../../../bindings/node" "$server")
nfield() { echo "$node" | sed -n "s/^$1 \([0-9.]*\).*/\1/p"; }
nsecond() { echo "$node" | sed -n "s/^$1 [0-9.]* \([0-9.]*\)/\1/p"; }
echo "Node ($server), one task, acquire + release (median of interleaved slices):"
awk -v f="$(nfield floor)" -v t="$(nfield tenure)" -v s="$(nfield semaphore)" -v r="$(nfield redlock)" 'BEGIN {
  printf "  raw ioredis floor (SET NX PX + DEL) %.1f us; tenure %.1f us = %.2f x the floor (target <= 1.05); redis-semaphore Mutex %.1f us = %.2f x; redlock %.1f us = %.2f x\n", f, t, t / f, s, s / f, r, r / f }'
echo "  tenure on its memory store: $(nfield memory) us per cycle (target <= 5); on a backend written in JavaScript (a Map): $(nfield user) us"
awk -v o="$(nfield contended)" -v p="$(nfield contended_semaphore)" -v f="$(nsecond contended)" -v g="$(nsecond contended_semaphore)" 'BEGIN {
  printf "  8 tasks on one name: tenure %.0f/s, redis-semaphore %.0f/s: %.2fx (target >= 2); Jain'"'"'s index: tenure %.3f, redis-semaphore %.3f (target >= 0.95)\n", o, p, o / p, f, g }'
fi

if [ "$part" = all ] || [ "$part" = rw ]; then
"$py" -m pip install -q "maturin>=1.16,<2"
"$(dirname "$py")/maturin" build --release -q -m bindings/python/Cargo.toml -o target/wheels-release
"$py" -m pip install -q --force-reinstall --no-deps target/wheels-release/tenure-*.whl
rw_dir=$(mktemp -d)
echo "Read-write locks, one task (median batches; grelmicro 0.44 and tenure's Python package in one interpreter):"
(cd benches/peer && "$py" python_rw.py "$rw_dir" "${TENURE_REDIS_URL:-redis://127.0.0.1:6379}" \
  "${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}") | sed 's/^/  /'
rm -rf "$rw_dir"
echo "Under contention (8 readers, a writer behind them, a semaphore of 4 permits under 8 tasks):"
(cd benches/peer && "$py" python_contention.py "${TENURE_REDIS_URL:-redis://127.0.0.1:6379}" \
  "${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}") | sed 's/^/  /'
fi
