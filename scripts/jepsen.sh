#!/usr/bin/env bash
# Jepsen-style runs of Tenure: client processes of the `tenure` command and the Python, npm and
# JVM packages take one lock (or a semaphore's permits, or run for leader) on a store the harness
# starts, while a nemesis injects faults; the history is judged by the checkers
# (docs/safety.md). Each run goes to target/jepsen/NAME (history.jsonl, faults.jsonl,
# report.txt, timeline.svg, the clients' logs).
#
#   scripts/jepsen.sh --store S --nemesis N --time T [tenure-jepsen run options]   one run
#   scripts/jepsen.sh --subset      the bounded subset the test command runs
#   scripts/jepsen.sh --all T [--jobs N]   every row of docs/safety.md, T seconds each, N at a
#                                          time (then each row's output in target/jepsen/NAME.log)
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
  "sentinel failover --allow stale-fence,duplicate-fence,shared-fence" "sentinel failover --min-replicas 2"
  "sentinel partition" "sentinel lag --expect stale-fence --allow duplicate-fence,shared-fence"
  "sentinel lag --min-replicas 2"
  "postgres pause" "postgres partition" "postgres kill" "postgres freeze"
  "etcd pause" "etcd partition" "etcd kill" "etcd freeze" "etcd leader" "etcd quorum" "etcd isolate" "etcd bridge"
  "sqlite pause --permits 2" "redis pause --permits 2" "postgres pause --permits 2" "etcd pause --permits 2"
  "sqlite pause --election" "sqlite clock --election" "redis pause --election" "redis kill --election"
  "sentinel failover --election --min-replicas 2" "postgres pause --election" "postgres kill --election"
  "etcd pause --election" "etcd leader --election" "etcd isolate --election"
  "redis pause --unfenced --expect lost --allow accepted-stale --fronts python,node"
  "redis pause --permits 2 --unfenced --expect over-capacity --fronts python,node --per-front 2"
  "redis pause --election --unfenced --expect lost --allow accepted-stale --fronts python,node"
)
# The subset the test command runs: every store, a pause, a partition, a clock jump (the JVM's
# first: it reproduces the clock that went back, below), the broken resource caught
# (by workers of the packages: a paused `tenure lock` stops its command when it wakes up, before
# the command's stale write, so a broken resource is not always reached through the CLI), a
# Sentinel failover with min_replicas (without, a failover may hand out a token again: the full
# run's row allows it and docs/safety.md explains it; here it would fail a run now and then).
subset=(
  "sqlite clock --fronts jvm,cli,python,node" "redis partition" "redis pause"
  "redis pause --unfenced --expect lost --allow accepted-stale --fronts python,node"
  "sentinel failover --min-replicas 2" "postgres pause --permits 2" "postgres pause --election" "etcd leader"
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

# A row's folder name under target/jepsen: store-nemesis, and what its options change.
row_name() {
  local name=$1-$2
  shift 2
  [[ " $* " != *" --unfenced "* ]] || name=$name-unfenced
  [[ " $* " != *" --permits "* ]] || name=$name-semaphore
  [[ " $* " != *" --min-replicas "* ]] || name=$name-replicas
  [[ " $* " != *" --election "* ]] || name=$name-election
  echo "$name"
}

# One run: store, nemesis, seconds, then options of `tenure-jepsen run`.
run() {
  local store=$1 nemesis=$2 time=$3
  shift 3
  local name fronts=(--fronts cli,python,node,jvm)
  name=$(row_name "$store" "$nemesis" "$@")
  [[ " $* " != *" --fronts "* ]] || fronts=()
  echo "== $store / $nemesis / ${time}s $*"
  target/debug/tenure-jepsen run --store "$store" --nemesis "$nemesis" --time "$time" \
    --python "$python" --node-path "$node_path" --kotlin-cp "$kotlin_cp" "${fronts[@]}" \
    --out "target/jepsen/$name" "$@"
}

# Every row of a list, T seconds each, JOBS at a time (each row's output then goes to
# target/jepsen/NAME.log); prints their table (docs/safety.md's, also in target/jepsen/table.md)
# and fails at the end naming the rows that failed.
rows() {
  local time=$1 jobs=$2 failed="" row name dirs=() pids=() labels=() i
  shift 2
  mkdir -p target/jepsen
  for row in "$@"; do
    # shellcheck disable=SC2086 # a row is words
    set -- $row
    name=$(row_name "$@")
    dirs+=("target/jepsen/$name")
    if [ "$jobs" = 1 ]; then
      run "$1" "$2" "$time" "${@:3}" || failed="$failed
  $row"
      continue
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    echo "== $row (target/jepsen/$name.log)"
    run "$1" "$2" "$time" "${@:3}" > "target/jepsen/$name.log" 2>&1 &
    pids+=($!)
    labels+=("$row")
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed="$failed
  ${labels[$i]}"
  done
  # (a run that failed early has no totals: the table says so, and the failed rows follow)
  target/debug/tenure-jepsen table "${dirs[@]}" | tee target/jepsen/table.md || true
  [ -z "$failed" ] || { echo "scripts/jepsen.sh: rows failed:$failed" >&2; exit 1; }
}

case "${1:-}" in
  --subset) rows 10 1 "${subset[@]}" ;;
  --all)
    [ $# = 2 ] || { [ $# = 4 ] && [ "$3" = --jobs ] && [ "$4" -ge 1 ] 2> /dev/null; } \
      || { echo "scripts/jepsen.sh: --all T [--jobs N] (T seconds per row, N rows at a time)" >&2; exit 2; }
    rows "$2" "${4:-1}" "${rows[@]}"
    ;;
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
  *) sed -n 2,12p "$0" >&2; exit 2 ;;
esac
