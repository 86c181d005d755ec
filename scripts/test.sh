#!/usr/bin/env bash
# Every test of Tenure, in named stages; with no argument every stage, in order, as CI runs it on
# a clean clone (.ci/run). Each stage installs and starts only what it needs, and the run ends
# with a table of every stage's time.
#
#   scripts/test.sh               every stage
#   scripts/test.sh --list        the stages, one line each
#   scripts/test.sh STAGE...      only those (in the order given)
#
# No stage may need a protobuf compiler: the whole run has a failing `protoc` first on PATH and
# PROTOC=/bin/false (etcd's protocol code is generated into the repository, backends/etcd/src/pb).
# (Benchmarks are type-checked by clippy's --all-targets; run them with `cargo bench`.)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# name|what it checks (the order is the order of a full run)
stages=(
  "lint|formatting, clippy, the core's dependency allowlist, SQLite-only builds, no protoc in any build, rustdoc, every § reference resolves"
  "rust|unit, property and doc tests of the workspace: the behaviour suite on three runtimes, the conformance suite on every store, fault, chaos and TLS tests on servers the tests start, the CLI, the simulator's own tests (every injected bug caught); the examples (the README's Rust example among them)"
  "sim|the deterministic simulation: its regressions, then 1000 fresh seeds (from the commit) of the core and of the driver"
  "fuzz|the fuzz targets, ${FUZZ_SECONDS:-20} s each (cargo-fuzz on stable)"
  "python|the portable manylinux2014 wheel in a fresh venv: the package's suite, the README's example, stubtest and mypy"
  "node|the portable linux-x64-gnu addon and the packed npm packages, installed: the suite, tsc --strict, the README's example"
  "kotlin|the JVM package: the Kotlin suite on every store, a Java program, the README's Kotlin and Java examples, a JVM exiting mid-election, the Swift bindings' shape"
  "interop|grelmicro 0.44 (Python 3.14) beside the CLI on SQLite, and beside the CLI and the Python, Node and Kotlin packages on Redis and PostgreSQL; read-write locks and semaphores on all three; etcdctl beside them on etcd; every error code through the three packages; the Python suite's 3.14 part"
  "jepsen|Jepsen-style runs (docs/safety.md): the CLI and the Python, npm and JVM packages on one lock (and a semaphore, and an election) of every store while a nemesis pauses a holder, cuts a client from the store, jumps a client's clock, kills the store's leader or fails it over; the fenced mutex, resource, set, capacity and progress checkers; a resource without fencing caught losing data"
  "metrics|Prometheus (Debian's) scraping a Rust, a Python and a Node program contending on a Redis lock and an election, and tenure exporter: counters equal the operations, one leader per election, a paused holder's loss and a killed one's expiry, every query of the Grafana dashboard returns data"
  "release|the release script's dry run: one version everywhere, cargo publish --dry-run, the sdist compiled offline"
  "demo|the main job (tenure demo on the default store) and the README's CLI example"
)

# Each step says when it began (minutes:seconds into the run).
step() { printf '\n==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
die() { echo "scripts/test.sh: $*" >&2; exit 1; }
apt_install() { apt-get update -qq && apt-get install -y -qq "$@" > /dev/null; }

# --- what stages need, each installed or started once per run ------------------------------------

# A `protoc` that fails, first on PATH, and PROTOC naming a program that fails: whatever still
# needs a protobuf compiler fails loudly.
no_protoc() {
  mkdir -p target/no-protoc
  printf '#!/bin/sh\necho "protoc was called: Tenure builds without a protobuf compiler" >&2\nexit 1\n' > target/no-protoc/protoc
  chmod +x target/no-protoc/protoc
  export PATH=$root/target/no-protoc:$PATH PROTOC=/bin/false
}

need_rust_tools() {
  for component in rustfmt clippy; do
    rustup component list --installed 2> /dev/null | grep -q "^$component" || rustup component add "$component"
  done
}

need_redis() {
  [ -z "${have_redis:-}" ] || return 0
  command -v redis-server > /dev/null && command -v redis-cli > /dev/null && command -v openssl > /dev/null \
    || apt_install redis-server redis-tools openssl
  if ! redis-cli -h 127.0.0.1 -p 6379 ping > /dev/null 2>&1; then
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 100); do redis-cli -h 127.0.0.1 -p 6379 ping > /dev/null 2>&1 && break; sleep 0.1; done
  fi
  redis-cli -h 127.0.0.1 -p 6379 info server | grep -E '^redis_version'
  have_redis=1
}

need_postgres() {
  [ -z "${have_postgres:-}" ] || return 0
  command -v psql > /dev/null && ls /usr/lib/postgresql/*/bin/initdb > /dev/null 2>&1 \
    || apt_install postgresql postgresql-client
  local url=${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
  if ! psql "$url" -Atc 'SELECT 1' > /dev/null 2>&1; then
    local cluster
    cluster=$(ls /etc/postgresql | sort -V | tail -1)
    pg_ctlcluster --skip-systemctl-redirect "$cluster" main start 2> /dev/null || true
    for _ in $(seq 100); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.1; done
    psql postgresql://postgres@127.0.0.1:5432/postgres -qAtc 'CREATE DATABASE test' 2> /dev/null || true
  fi
  psql "$url" -Atc 'SHOW server_version'
  have_postgres=1
}

# nft: the Jepsen harness cuts clients from stores with nftables rules (its own tests too).
need_nft() {
  command -v nft > /dev/null || apt_install nftables
}

# tmux: `tenure watch` is tested in a real terminal (cli/tests/watch.rs).
need_tmux() {
  command -v tmux > /dev/null || apt_install tmux
}

# etcd and etcdctl: the etcd store's tests start members of their own.
need_etcd() {
  command -v etcd > /dev/null && command -v etcdctl > /dev/null || apt_install etcd-server etcd-client
  etcd --version | sed -n 1p # (sed reads all: head would end etcd with SIGPIPE under pipefail)
}

# --- artifacts built in the background -----------------------------------------------------------
# While a package's suite waits on leases and timers, about one core is idle: the package the
# next stage tests is built then (the npm packages during the Python suite, the JVM package during
# the npm suite; the release stage's dry run during the Kotlin suite), each a job with its own log
# in target/jobs. A stage that needs one waits for it
# (and fails with its log if it failed); a stage run alone builds what it needs itself. (Not during
# the rust stage's tests: the conformance suite's real-clock sequences on PostgreSQL judge each
# operation within 50 ms, and a build beside them, even at nice 19, makes them too late to judge.)
declare -A building=()
begin() { # NAME COMMAND...: runs COMMAND in the background, its output in target/jobs/NAME.log
  local name=$1
  shift
  mkdir -p target/jobs
  rm -f "target/jobs/$name".*
  ("$@" > "target/jobs/$name.log" 2>&1; echo $? > "target/jobs/$name.status") &
  building[$name]=$!
}
finish() { # NAME: waits for the job (in this shell: not in $(…)); its output's last line in $finished
  local name=$1
  wait "${building[$name]}" || true
  unset "building[$name]"
  if [ "$(cat "target/jobs/$name.status" 2> /dev/null)" != 0 ]; then
    cat "target/jobs/$name.log" >&2
    die "the background build '$name' failed (its log above, and in target/jobs/$name.log)"
  fi
  finished=$(tail -1 "target/jobs/$name.log")
}
# Whether a stage after the current one needs NAME's artifact (one of the stages given).
later() {
  local name
  for name in "$@"; do printf '%s\n' "${chosen[@]}" | grep -qx -- "$name" && return 0; done
  return 1
}

# The artifacts later stages reuse, built once per run: by the background job NAME if one was
# begun, else now by COMMAND (its output's last line is the artifact); kept in VAR.
artifact() { # VAR NAME COMMAND...
  local var=$1 name=$2
  shift 2
  [ -z "${!var:-}" ] || return 0
  if [ -n "${building[$name]:-}" ]; then
    finish "$name"
  else
    finished=$("$@" | tail -1)
  fi
  printf -v "$var" '%s' "$finished"
}
wheel_artifact() {
  [ -n "${wheel:-}" ] || rm -rf target/wheels
  artifact wheel wheel scripts/wheel.sh manylinux2014-x86_64 target/wheels
}
node_artifact() { artifact node_modules node scripts/test-node.sh --install; }
kotlin_artifact() { artifact kotlin_cp kotlin scripts/test-kotlin.sh --build; }
grelmicro_python() {
  [ -n "${py314:-}" ] || py314=$(bash scripts/grelmicro-env.sh | tail -1)
}

# --- the stages ----------------------------------------------------------------------------------

stage_lint() {
  need_rust_tools
  cargo --version
  step "format"
  cargo fmt --all --check

  step "lints"
  cargo clippy --workspace --all-targets -- -D warnings

  step "the core depends on no runtime, socket, clock or OS randomness"
  # An allowlist: a new dependency of tenure-core fails here until it is judged and added.
  local allowed='^(tenure-core|rand_core|serde|serde_core|serde_derive|thiserror|thiserror-impl|proc-macro2|quote|syn|unicode-ident)$'
  local deps unexpected
  deps=$(cargo tree -p tenure-core -e normal --prefix none --format '{p}' | awk '{print $1}' | sort -u)
  unexpected=$(grep -Ev "$allowed" <<< "$deps" || true)
  [ -z "$unexpected" ] || die "tenure-core gained dependencies outside the allowlist: $unexpected"
  tr '\n' ' ' <<< "$deps"; echo

  step "features: the store opener and the command built with SQLite alone carry no Redis, PostgreSQL, etcd or TLS crate"
  local only tree extra
  for only in "tenure-open --features backend-sqlite" "tenure-cli --features sqlite"; do
    # shellcheck disable=SC2086 # (the package and its feature, split)
    # (the tree first, so that a failing `cargo tree` fails the step instead of finding nothing)
    tree=$(cargo tree -e normal --prefix none --format '{p}' --no-default-features -p $only)
    extra=$(awk '{print $1}' <<< "$tree" | sort -u \
      | grep -E '^(tenure-redis|redis|tenure-postgres|tokio-postgres|postgres-.*|tenure-etcd|tonic.*|prost.*|rustls.*|ring|openssl.*|native-tls|webpki.*)$' || true)
    [ -z "$extra" ] || die "$only pulls in: $extra"
  done
  echo ok

  step "the driver knows the store traits and no store: no store crate in its tree, no store named in its sources"
  local stores named
  stores=$(sed -n 's/^name = "\(.*\)"$/\1/p' backends/*/Cargo.toml | sort -u)
  tree=$(cargo tree -e normal --prefix none --format '{p}' -p tenure)
  extra=$(awk '{print $1}' <<< "$tree" | sort -u | grep -Fxf <(echo "$stores") || true)
  [ -z "$extra" ] || die "the driver (tenure) depends on $extra"
  named=$(grep -rniwE 'redis|valkey|postgres|postgresql|etcd|sqlite|tenure_(sqlite|redis|postgres|etcd|open|store)' runtimes/driver/src || true)
  [ -z "$named" ] || die "the driver's sources name a store (its place is the store's crate, tenure-store or tenure-open): $named"
  echo ok

  step "no protobuf compiler: nothing any front end builds runs prost-build, tonic-build or a bundled protoc"
  for package in tenure-cli tenure-open tenure-python tenure-node tenure-uniffi; do
    tree=$(cargo tree -e normal,build --prefix none --format '{p}' -p "$package")
    extra=$(awk '{print $1}' <<< "$tree" | sort -u | grep -E '^(prost-build|tonic-build|tonic-prost-build|protoc.*|protobuf-src)$' || true)
    [ -z "$extra" ] || die "$package builds with $extra"
  done
  echo ok

  step "docs (no broken links) of the crates users read (not the test harnesses')"
  local internal
  internal=(tenure-suite tenure-conformance tenure-sim tenure-jepsen tenure-metrics-test tenure-fuzz tenure-etcd-codegen
    tenure-uniffi-bindgen)
  # shellcheck disable=SC2046 # (one --exclude per crate)
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet $(printf -- '--exclude %s ' "${internal[@]}")

  step "every § reference in the repository names a heading of docs/design.md or docs/spec/"
  python3 scripts/check-references.py

  step "the README's Rust example is the quickstart example the rust stage runs"
  diff <(scripts/readme-example.sh rust) <(sed -n '/^use /,$p' runtimes/tokio/examples/quickstart.rs) \
    || die "README.md's \`\`\`rust block differs from runtimes/tokio/examples/quickstart.rs (after its header)"
  echo ok
}

stage_rust() {
  need_redis
  need_postgres
  need_etcd
  need_nft
  need_tmux
  command -v cargo-nextest > /dev/null || cargo install -q cargo-nextest --locked
  step "tests (cargo nextest: each test in its own process, eight at a time; .config/nextest.toml)"
  cargo nextest run --workspace
  step "doc tests"
  cargo test -q --workspace --doc
  # The store opener with every store left out: known schemes are refused naming their feature.
  cargo test -q -p tenure-open --no-default-features

  step "examples"
  # Built with the workspace's features (the test build built them already): `cargo run -p X
  # --example` would build each again with its package's features alone.
  cargo build -q --workspace --examples
  # All five at once (they mostly wait on leases and timers), each one's output kept apart.
  local example failed=""
  local -A pids=()
  for example in two_workers quickstart fenced_writes leader nightly_job; do
    "target/debug/examples/$example" > "target/example-$example.log" 2>&1 &
    pids[$example]=$!
  done
  for example in "${!pids[@]}"; do
    wait "${pids[$example]}" || failed="$failed $example"
    echo "-- $example"
    cat "target/example-$example.log"
  done
  [ -z "$failed" ] || die "examples failed:$failed"
}

stage_sim() {
  cargo build -q -p tenure-sim --profile sim
  local commit seed
  commit=$(git rev-parse --short=12 HEAD 2> /dev/null || echo 0)
  seed=$((16#$commit))
  target/sim/tenure-sim --seed "$seed" --seeds 1000 --no-record
  # The driver itself (foreground and background drives, hand-offs, keep-alives) on the simulated
  # runtime and store.
  target/sim/tenure-sim --seed "$seed" --seeds 1000 --profile driver --no-record
}

stage_fuzz() {
  command -v cargo-fuzz > /dev/null || cargo install -q cargo-fuzz --locked
  local seconds=${FUZZ_SECONDS:-20} target runs failed="" targets
  export RUSTC_BOOTSTRAP=1 # cargo-fuzz's sanitizer flags; CI machines have no nightly
  cargo fuzz build -O
  targets=$(cargo fuzz list)
  [ -n "$targets" ] || die "cargo fuzz list names no target"
  # Two targets at a time, one per core (each fuzzer is one process on one core).
  fuzz_one() {
    cargo fuzz run -O "$1" -- -max_total_time="$seconds" -print_final_stats=1 > "target/fuzz-$1.log" 2>&1 \
      || echo "$1" >> target/fuzz-failed
  }
  rm -f target/fuzz-failed
  local -a running=()
  for target in $targets; do
    fuzz_one "$target" &
    running+=($!)
    if [ ${#running[@]} -ge 2 ]; then wait "${running[0]}"; running=("${running[@]:1}"); fi
  done
  wait
  for target in $targets; do
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "target/fuzz-$target.log")
    echo "$target: ${runs:-?} inputs in $seconds s"
  done
  [ ! -f target/fuzz-failed ] || failed=$(tr '\n' ' ' < target/fuzz-failed)
  for target in $failed; do
    tail -40 "target/fuzz-$target.log" >&2
    echo "fuzz target $target failed; reproduce with: RUSTC_BOOTSTRAP=1 cargo fuzz run -O $target fuzz/artifacts/$target/<file>" >&2
  done
  [ -z "$failed" ] || die "fuzz targets failed: $failed"
  unset RUSTC_BOOTSTRAP
}

stage_python() {
  need_redis
  need_postgres
  need_etcd
  wheel_artifact
  echo "$(basename "$wheel") ($(du -h "$wheel" | cut -f1))"
  cargo build -q -p tenure-cli # (test_hold.py revokes a lock with the command, as an operator does)
  # (the npm packages, while the Python suite waits on leases)
  if [ -z "${node_modules:-}" ] && later node interop jepsen metrics; then begin node scripts/test-node.sh --install; fi
  local venv=target/python-test-venv
  rm -rf "$venv"
  python3 -m venv "$venv"
  # (opentelemetry-sdk: test_telemetry.py turns the metrics on as a user does)
  "$venv/bin/pip" install -q pytest mypy opentelemetry-api opentelemetry-sdk "$wheel"
  (cd bindings/python/tests && TENURE_CLI=$root/target/debug/tenure "$root/$venv/bin/python" -m pytest -q -p no:cacheprovider)
  # The README's Python example, run as a user would paste it.
  scripts/readme-example.sh python > target/readme_example.py
  "$venv/bin/python" target/readme_example.py
  # The stubs of the native module against the built one, and the package's own annotations.
  (cd target && "$root/$venv/bin/python" -m mypy.stubtest tenure && "$root/$venv/bin/python" -m mypy -p tenure)
}

stage_node() {
  need_redis
  need_postgres
  need_etcd
  node_artifact
  cargo build -q -p tenure-cli # (revoke.test.mjs revokes a lock with the command, as an operator does)
  # (the JVM package, while the npm suite waits on leases)
  if [ -z "${kotlin_cp:-}" ] && later kotlin interop jepsen; then begin kotlin scripts/test-kotlin.sh --build; fi
  # (tee to a file: a tee to /dev/stderr would reopen, and so truncate, a log that stderr goes to)
  TENURE_CLI=$root/target/debug/tenure scripts/test-node.sh --test "$node_modules" | tee target/test-node.out
}

stage_kotlin() {
  need_redis
  need_postgres
  need_etcd
  kotlin_artifact
  cargo build -q -p tenure-cli # (LockTests.kt revokes a lock with the command, as an operator does)
  # (the release stage's dry run, while the Kotlin suite waits on leases; it collects the jar)
  if later release; then
    command -v node > /dev/null || apt_install nodejs npm # (release.sh reads the npm versions)
    begin release scripts/release.sh --dry-run
  fi
  # (and the Prometheus test's Rust program, which the metrics stage runs)
  if later metrics; then begin metrics-build cargo build -q -p tenure-cli -p tenure-metrics-test; fi
  TENURE_CLI=$root/target/debug/tenure scripts/test-kotlin.sh --test "$kotlin_cp"
}

stage_interop() {
  need_redis
  need_postgres
  need_etcd
  grelmicro_python
  wheel_artifact
  node_artifact
  kotlin_artifact
  cargo build -q -p tenure-cli
  local tenure=target/debug/tenure store
  # The Python package (the wheel the python stage built) beside grelmicro in its interpreter.
  "$py314" -m pip install -q --force-reinstall --no-deps "$wheel"
  step "grelmicro 0.44 and tenure on one SQLite file; read-write locks on every store"
  tests/interop/sqlite.sh "$py314" "$tenure"
  for store in sqlite redis postgres; do
    TENURE_PYTHON=$py314 TENURE_KOTLIN_CP=$kotlin_cp tests/interop/rw.sh "$store" "$py314" "$tenure"
  done
  step "semaphores (Tenure's own): the CLI, the Python, npm and JVM packages on one semaphore"
  for store in sqlite redis postgres; do
    TENURE_NODE_PATH=$node_modules TENURE_KOTLIN_CP=$kotlin_cp tests/interop/semaphore.sh "$store" "$py314" "$tenure"
  done
  step "grelmicro 0.44, the CLI and the Python, Node and Kotlin packages on one Redis, one PostgreSQL; etcdctl beside them"
  export TENURE_KOTLIN_CP=$kotlin_cp TENURE_NODE_PATH=$node_modules TENURE_PYTHON=$py314
  tests/interop/store.sh redis "$py314" "$tenure"
  tests/interop/store.sh postgres "$py314" "$tenure"
  tests/interop/etcd.sh "$tenure"
  unset TENURE_KOTLIN_CP TENURE_NODE_PATH TENURE_PYTHON
  step "one error table: every code of the core raised through the Python, Node and JVM packages"
  "$py314" tests/interop/errors.py "$node_modules" "$kotlin_cp"
  step "the Python package and grelmicro in one asyncio program, on Redis and through a Sentinel URL"
  "$py314" tests/interop/python_mixed.py "${TENURE_REDIS_URL:-redis://127.0.0.1:6379}"
  step "the Python suite's part that Python 3.14 changes (asyncio runs a task's first step eagerly from 3.12), beside grelmicro"
  "$py314" -m pip install -q pytest
  (cd bindings/python/tests && "$py314" -m pytest -q -p no:cacheprovider -m py314)
}

stage_jepsen() {
  need_redis
  need_postgres
  need_etcd
  need_nft
  wheel_artifact
  node_artifact
  kotlin_artifact
  local venv=target/jepsen-venv
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "$wheel"
  TENURE_PYTHON=$venv/bin/python TENURE_NODE_PATH=$node_modules TENURE_KOTLIN_CP=$kotlin_cp scripts/jepsen.sh --subset
}

stage_metrics() {
  need_redis
  wheel_artifact
  node_artifact
  if [ -n "${building[metrics-build]:-}" ]; then finish metrics-build; fi
  scripts/metrics.sh "$wheel" "$(dirname "$(dirname "$node_modules")")"
}

stage_release() {
  if [ -n "${building[release]:-}" ]; then
    finish release
    cat target/jobs/release.log
    return
  fi
  # (release.sh reads the npm packages' versions with node)
  command -v node > /dev/null || apt_install nodejs npm
  scripts/release.sh --dry-run
}

stage_demo() {
  # (On a clean clone, as CI runs, the first build of every crate, in the lint stage, had no protoc.)
  step "the main job, as a newcomer runs it: tenure demo on the default store"
  cargo run -q -p tenure-cli -- demo
  step "the README's CLI example, on a fresh state folder"
  local state
  state=$(mktemp -d)
  cargo build -q -p tenure-cli
  scripts/readme-example.sh bash > "$state/example.sh"
  (cd "$state" && PATH=$root/target/debug:$PATH XDG_STATE_HOME=$state bash -euo pipefail example.sh)
  rm -rf "$state"
}

# --- the run -------------------------------------------------------------------------------------

names=()
for entry in "${stages[@]}"; do names+=("${entry%%|*}"); done

if [ "${1:-}" = --list ] || [ "${1:-}" = -l ]; then
  for entry in "${stages[@]}"; do printf '%-8s %s\n' "${entry%%|*}" "${entry#*|}"; done
  exit 0
fi
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
chosen=("$@")
[ ${#chosen[@]} -gt 0 ] || chosen=("${names[@]}")
for name in "${chosen[@]}"; do
  printf '%s\n' "${names[@]}" | grep -qx -- "$name" || die "no stage '$name' (the stages: ${names[*]}; see --list)"
done

no_protoc
timings=()
current=""
started=0
report() {
  local status=$?
  [ -z "$current" ] || timings+=("$current|$((SECONDS - started))|FAILED")
  [ ${#timings[@]} -gt 0 ] || exit "$status"
  printf '\n%-9s %9s\n' stage time
  local entry name took outcome
  for entry in "${timings[@]}"; do
    IFS='|' read -r name took outcome <<< "$entry"
    printf '%-9s %6d:%02d  %s\n' "$name" $((took / 60)) $((took % 60)) "$outcome"
  done
  printf '%-9s %6d:%02d\n' total $((SECONDS / 60)) $((SECONDS % 60))
  exit "$status"
}
# (a run that ends early ends the builds it began, and their children)
stop_jobs() {
  local pid
  for pid in $(jobs -p); do
    pkill -TERM -P "$pid" 2> /dev/null || true
    kill "$pid" 2> /dev/null || true
  done
}
trap 'status=$?; stop_jobs; (exit $status); report' EXIT
for name in "${chosen[@]}"; do
  current=$name started=$SECONDS
  step "stage $name: $(printf '%s\n' "${stages[@]}" | grep "^$name|" | cut -d'|' -f2-)"
  "stage_$name"
  timings+=("$name|$((SECONDS - started))|ok")
  current=""
done
echo
echo "all stages passed: ${chosen[*]}"
