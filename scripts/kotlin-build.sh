#!/usr/bin/env bash
# Builds the JVM package: the uniffi library (`tenure-uniffi`), its generated Kotlin layer, and
# the Kotlin package `tenure` on top, compiled with kotlinc into target/kotlin/<profile>/tenure.jar,
# which carries the native library (linux-x86-64/libtenure_uniffi.so, where JNA looks for it).
# Installs what is missing: a JDK (javac, jar), JNA (Debian's libjna-java) and the Kotlin
# compiler (the npm registry's kotlin-compiler, which also carries kotlinx-coroutines) — no Maven
# or Gradle repository is needed.
# Usage: scripts/kotlin-build.sh [debug|release]. Prints the classpath to run with, last.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
profile=${1:-debug}
kotlin_version=2.4.20

command -v javac > /dev/null && command -v jar > /dev/null \
  || { apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless > /dev/null; }
jna=/usr/share/java/jna.jar
[ -f "$jna" ] || { apt-get update -qq && apt-get install -y -qq libjna-java > /dev/null; }

kotlin_home=${KOTLIN_HOME:-$root/target/kotlin-compiler/package}
if [ ! -x "$kotlin_home/bin/kotlinc" ]; then
  command -v npm > /dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm > /dev/null; }
  mkdir -p target/kotlin-compiler
  (cd target/kotlin-compiler && npm pack --silent "kotlin-compiler@$kotlin_version" > /dev/null \
    && tar xzf "kotlin-compiler-$kotlin_version.tgz" && rm "kotlin-compiler-$kotlin_version.tgz")
  chmod +x "$kotlin_home"/bin/*
fi
kotlinc=$kotlin_home/bin/kotlinc
runtime_cp=$kotlin_home/lib/kotlin-stdlib.jar:$kotlin_home/lib/kotlinx-coroutines-core-jvm.jar:$jna

flag=()
[ "$profile" = release ] && flag=(--release)
# TENURE_UNIFFI_FEATURES=bench adds bench_rust_cycles (scripts/bench-kotlin.sh).
[ -n "${TENURE_UNIFFI_FEATURES:-}" ] && flag+=(--features "$TENURE_UNIFFI_FEATURES")
cargo build -q -p tenure-uniffi "${flag[@]}" >&2
cargo build -q -p tenure-uniffi-bindgen >&2
lib=target/$profile/libtenure_uniffi.so

out=target/kotlin/$profile
rm -rf "$out/gen" "$out/classes" "$out/native"
mkdir -p "$out/native/linux-x86-64" "$out/classes"
target/debug/uniffi-bindgen generate --library "$lib" --language kotlin --no-format --out-dir "$out/gen" > /dev/null
python3 bindings/uniffi/kotlin/pooled_status.py "$out/gen/tenure/ffi/tenure.kt"
# The debug library's symbols are not needed to run it, and are most of its size.
strip --strip-debug -o "$out/native/linux-x86-64/libtenure_uniffi.so" "$lib"

"$kotlinc" -nowarn -jvm-target 17 -cp "$runtime_cp" -d "$out/classes" \
  "$out/gen" bindings/uniffi/kotlin/src 2>&1 | grep -v '^warning:' >&2 || true
[ -f "$out/classes/tenure/Lock.class" ] || { echo "kotlinc failed" >&2; exit 1; }
rm -f "$out/tenure.jar"
jar --create --file "$out/tenure.jar" -C "$out/classes" . -C "$out/native" .
echo "built $out/tenure.jar ($(du -h "$out/tenure.jar" | cut -f1))" >&2
echo "$root/$out/tenure.jar:$runtime_cp"
