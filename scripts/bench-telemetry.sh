#!/usr/bin/env bash
# What the driver's telemetry costs a cycle, in counts that do not drift: valgrind's callgrind
# instructions per acquire + release on the memory backend (tokio, current thread: the same count
# every run), measured as the
# difference between N and 2N cycles (the setup cancels out), for:
#   - this tree with no sink installed, and with the OpenTelemetry SDK installed;
#   - BASE (default: the commit before the telemetry was added) with the same cycle
#     program, so "no sink" is compared with the driver before it had any hooks.
# Then the wall-clock bench (alternating rounds, memory and Redis): cargo bench --bench telemetry.
# Usage: scripts/bench-telemetry.sh [BASE]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# BASE: the parent of the commit that added the telemetry (HEAD while it is not committed).
added=$(git log --diff-filter=A --format=%H -- runtimes/driver/src/telemetry/mod.rs | tail -1)
base=${1:-${added:+$added^}}
base=${base:-HEAD}
n=${TENURE_BENCH_CYCLES:-2000}
cargo build -q --release -p tenure-tokio --bench telemetry
bench=$(ls -t target/release/deps/telemetry-* | grep -v '\.d$' | head -1)

# Instructions of `cmd cycles K mode`, for K = N and 2N: per cycle.
per_cycle() {
  local out="$root/target/callgrind.tmp" one two
  valgrind --tool=callgrind --callgrind-out-file="$out" "$@" cycles "$n" "$mode" > /dev/null 2>&1
  one=$(callgrind_annotate "$out" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  valgrind --tool=callgrind --callgrind-out-file="$out" "$@" cycles $((2 * n)) "$mode" > /dev/null 2>&1
  two=$(callgrind_annotate "$out" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  rm -f "$out"
  echo $(((two - one) / n))
}

declare -A counts
for mode in none otel; do counts[$mode]=$(per_cycle "$bench"); done

# The same cycle program against BASE's driver, built in a worktree of its own.
work=$root/target/bench-telemetry-base
rm -rf "$work"
git worktree add -q --detach "$work" "$base"
trap 'git -C "$root" worktree remove --force "$work"' EXIT
cat > "$work/runtimes/tokio/benches/cycles.rs" <<'RS'
use tenure::{Lock, MemoryBackend};
use tenure_tokio::Tokio;
fn main() {
  let args: Vec<String> = std::env::args().collect();
  let n: u32 = args[2].parse().unwrap();
  let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
  let rt = Tokio::from_handle(runtime.handle().clone());
  runtime.block_on(async {
      let lock = Lock::builder("bench", rt.clone()).backend(MemoryBackend::new()).env_load(false).build().unwrap();
      for _ in 0..n {
          lock.acquire().await.unwrap().release().await.unwrap();
      }
  });
}
RS
printf '\n[[bench]]\nname = "cycles"\nharness = false\n' >> "$work/runtimes/tokio/Cargo.toml"
(cd "$work" && CARGO_TARGET_DIR=$root/target cargo build -q --release -p tenure-tokio --bench cycles)
base_bench=$(ls -t "$root"/target/release/deps/cycles-* | grep -v '\.d$' | head -1)
mode=none
counts[base]=$(per_cycle "$base_bench")

echo "instructions per acquire + release on the memory backend (callgrind, (2N - N) / N, N = $n):"
echo "  before the telemetry ($(git rev-parse --short "$base")):   ${counts[base]}"
echo "  no sink installed:                 ${counts[none]}"
echo "  the OpenTelemetry SDK installed:   ${counts[otel]}"
awk -v b="${counts[base]}" -v x="${counts[none]}" 'BEGIN { printf "  no sink / before: %.3f (target: within 5 %%)\n", x / b }'
awk -v b="${counts[none]}" -v x="${counts[otel]}" 'BEGIN { printf "  SDK / no sink:    %.3f\n", x / b }'
echo
cargo bench -q -p tenure-tokio --bench telemetry
