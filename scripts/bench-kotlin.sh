#!/usr/bin/env bash
# The JVM package's cost over Rust, measured in one process and reported as ratios: one
# coroutine's acquire + release on memory and on Redis from Kotlin beside the same cycle run in
# Rust on the same store (bindings/uniffi/kotlin/bench). Targets: the uniffi crossing costs at
# most 10 us per call ((Kotlin cycle - Rust cycle) / 2 on memory), and a Redis cycle at most
# 1.15x Rust's. Builds the release library with the `bench` feature.
# Usage: scripts/bench-kotlin.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cp=$(TENURE_UNIFFI_FEATURES=bench scripts/kotlin-build.sh release | tail -1)
. scripts/tools.sh
kotlinc=$kotlin_home/bin/kotlinc
server=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
rm -rf target/kotlin/release/bench.jar
"$kotlinc" -nowarn -jvm-target 17 -cp "$cp" -d target/kotlin/release/bench.jar bindings/uniffi/kotlin/bench 2>&1 | grep -v '^warning:' >&2 || true
out=$(java -cp "target/kotlin/release/bench.jar:$cp" tenure.bench.BenchKt "$server")
redis-cli -u "$server" --scan --pattern 'tenure-bench-kotlin-*' | xargs -r redis-cli -u "$server" del > /dev/null
us() { echo "$out" | awk -v s="$1" -v k="$2" '$1 == s && $2 == k { print $3 }'; }
for store in memory redis; do
  echo "$store, one coroutine's acquire + release (median of 31 interleaved slices, us per cycle):"
  rust=$(us "$store" rust)
  echo "  Rust: a task of the runtime $rust us; a thread blocked on each step (block_on) $(us "$store" rust-blocked) us"
  for step in kotlin-suspend kotlin-suspend-default kotlin-withLock kotlin-blocking generated-suspend; do
    awk -v r="$rust" -v k="$(us "$store" "$step")" -v s="$step" 'BEGIN {
      printf "  %-22s %8.2f us = %.3f x Rust (%.2f us); %.2f us per call over Rust\n", s, k, k / r, r, (k - r) / 2 }'
  done
done
for after in 0 100; do
  awk -v a="$after" -v s="$(us "wake-$after" suspend)" -v d="$(us "wake-$after" suspend-default)" -v b="$(us "wake-$after" blocking)" 'BEGIN {
    printf "a wake-up from Tenure'"'"'s runtime %d us after the call: a coroutine in runBlocking %.1f us, on Dispatchers.Default %.1f us, a blocked thread %.1f us (%.1f / %.1f us more)\n", a, s, d, b, s - b, d - b }'
done
awk -v r="$(us memory rust)" -v k="$(us memory kotlin-suspend)" 'BEGIN {
  printf "target: the crossing <= 10 us per call on memory: %.2f us\n", (k - r) / 2 }'
awk -v r="$(us redis rust)" -v k="$(us redis kotlin-suspend-default)" -v b="$(us redis kotlin-suspend)" -v j="$(us redis kotlin-blocking)" 'BEGIN {
  printf "target: a Redis cycle <= 1.15 x Rust'"'"'s task: a coroutine on Dispatchers.Default %.3f x; in runBlocking %.3f x; blocking %.3f x\n", k / r, b / r, j / r }'
awk -v r="$(us redis rust-blocked)" -v k="$(us redis kotlin-suspend-default)" -v b="$(us redis kotlin-suspend)" -v j="$(us redis kotlin-blocking)" 'BEGIN {
  printf "  against Rust blocked on each step (the same crossing from the runtime'"'"'s threads): %.3f x, %.3f x, %.3f x\n", k / r, b / r, j / r }'
