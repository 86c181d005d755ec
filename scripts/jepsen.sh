#!/usr/bin/env bash
# Jepsen-style runs of Tenure: client processes of the `tenure` command and the Python, npm and
# JVM packages take one lock (or a semaphore's permits, or run for leader) on a store the harness starts, while a nemesis injects faults; the
# history is judged by the checkers (docs/safety.md). Each run goes to target/jepsen/NAME
# (history.jsonl, faults.jsonl, report.txt, timeline.svg, the clients' logs).
#
#   scripts/jepsen.sh --store S --nemesis N --time T [tenure-jepsen run options]   one run
#   scripts/jepsen.sh --subset      the bounded subset the test command runs
#   scripts/jepsen.sh --all T       every row of docs/safety.md, T seconds each
#
# The clients: the `tenure` command and the Python, npm and JVM packages, one process each. The
# Python package: TENURE_PYTHON (a Python with it installed), else a venv made from a fresh
# wheel; the npm package: TENURE_NODE_PATH (a node_modules holding it), else installed from a
# fresh pack; the JVM package: TENURE_KOTLIN_CP (its classpath with the harness's Kotlin client),
# else built. What the machine lacks (redis, PostgreSQL, etcd, libfaketime, nftables, node) is
# installed. Partitions need root (cgroups and nftables rules).
set -euo pipefail
cd "$(dirname "$0")/.."

# store nemesis [run options]: every row of docs/safety.md.
rows=(
  "sqlite none" "sqlite pause" "sqlite clock"
  "redis pause" "redis partition" "redis kill" "redis freeze" "redis clock"
  "sentinel failover" "sentinel failover --min-replicas 2" "sentinel partition"
  "postgres pause" "postgres partition" "postgres kill" "postgres freeze"
  "etcd pause" "etcd partition" "etcd kill" "etcd freeze" "etcd leader" "etcd quorum" "etcd isolate" "etcd bridge"
  "sqlite pause --permits 2" "redis pause --permits 2" "postgres pause --permits 2" "etcd pause --permits 2"
  "sqlite pause --election" "sqlite clock --election" "redis pause --election" "redis kill --election"
  "sentinel failover --election --min-replicas 2" "postgres pause --election" "postgres kill --election"
  "etcd pause --election" "etcd leader --election" "etcd isolate --election"
  "redis pause --unfenced --expect lost --fronts python,node"
  "redis pause --permits 2 --unfenced --expect over-capacity --fronts python,node --per-front 2"
  "redis pause --election --unfenced --expect lost --fronts python,node"
)
# The subset the test command runs: every store, a pause, a partition, a clock jump (the JVM's
# first: it reproduces the clock that went back, below), the broken resource caught
# (by workers of the packages: a paused `tenure lock` stops its command when it wakes up, before
# the command's stale write, so a broken resource is not always reached through the CLI).
subset=(
  "sqlite clock --fronts jvm,cli,python,node" "redis partition" "redis pause"
  "redis pause --unfenced --expect lost --fronts python,node"
  "sentinel failover" "postgres pause --permits 2" "postgres pause --election" "etcd leader"
)

apt_install() { apt-get update -qq && apt-get install -y -qq "$@" > /dev/null; }
command -v redis-server > /dev/null || apt_install redis-server redis-tools
ls /usr/lib/postgresql/*/bin/initdb > /dev/null 2>&1 || apt_install postgresql postgresql-client
command -v etcd > /dev/null && command -v etcdctl > /dev/null || apt_install etcd-server etcd-client
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || apt_install faketime
command -v nft > /dev/null || apt_install nftables
command -v node > /dev/null || apt_install nodejs npm

cargo build -q -p tenure-cli -p tenure-jepsen
python=${TENURE_PYTHON:-}
if [ -z "$python" ]; then
  wheel=$(scripts/wheel.sh manylinux2014-x86_64 target/wheels | tail -1)
  rm -rf target/jepsen-venv
  python3 -m venv target/jepsen-venv
  target/jepsen-venv/bin/pip install -q "$wheel"
  python=target/jepsen-venv/bin/python
fi
node_path=${TENURE_NODE_PATH:-$(scripts/test-node.sh --install | tail -1)}
kotlin_cp=${TENURE_KOTLIN_CP:-$(scripts/test-kotlin.sh --build | tail -1)}

# One run: store, nemesis, seconds, then options of `tenure-jepsen run`.
run() {
  local store=$1 nemesis=$2 time=$3
  shift 3
  local name=$store-$nemesis
  [[ " $* " != *" --unfenced "* ]] || name=$name-unfenced
  [[ " $* " != *" --permits "* ]] || name=$name-semaphore
  [[ " $* " != *" --min-replicas "* ]] || name=$name-replicas
  [[ " $* " != *" --election "* ]] || name=$name-election
  local fronts=(--fronts cli,python,node,jvm)
  [[ " $* " != *" --fronts "* ]] || fronts=()
  echo "== $store / $nemesis / ${time}s $*"
  dirs+=("target/jepsen/$name")
  target/debug/tenure-jepsen run --store "$store" --nemesis "$nemesis" --time "$time" \
    --python "$python" --node-path "$node_path" --kotlin-cp "$kotlin_cp" "${fronts[@]}" \
    --out "target/jepsen/$name" "$@"
}

# Every row of a list, T seconds each; prints their table (docs/safety.md's, also in
# target/jepsen/table.md) and fails at the end naming the rows that failed.
rows() {
  local time=$1 failed="" row
  shift
  dirs=()
  for row in "$@"; do
    # shellcheck disable=SC2086 # a row is words
    set -- $row
    run "$1" "$2" "$time" "${@:3}" || failed="$failed
  $row"
  done
  # (a run that failed early has no totals: the table says so, and the failed rows follow)
  target/debug/tenure-jepsen table "${dirs[@]}" | tee target/jepsen/table.md || true
  [ -z "$failed" ] || { echo "scripts/jepsen.sh: rows failed:$failed" >&2; exit 1; }
}

case "${1:-}" in
  --subset) rows 10 "${subset[@]}" ;;
  --all) rows "${2:?--all T: seconds per row}" "${rows[@]}" ;;
  --store)
    store=$2 nemesis=none time=30
    shift 2
    rest=()
    while [ $# -gt 0 ]; do
      case $1 in
        --nemesis) nemesis=$2; shift 2 ;;
        --time) time=$2; shift 2 ;;
        *) rest+=("$1"); shift ;;
      esac
    done
    run "$store" "$nemesis" "$time" "${rest[@]}"
    ;;
  *) sed -n 2,13p "$0" >&2; exit 2 ;;
esac
