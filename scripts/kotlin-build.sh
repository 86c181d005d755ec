#!/usr/bin/env bash
# Builds the JVM package: the uniffi library (`tenure-uniffi`), its generated Kotlin layer, and
# the Kotlin package `tenure` on top, compiled with kotlinc into target/kotlin/<profile>/tenure.jar,
# which carries the native library (linux-x86-64/libtenure_uniffi.so, where JNA looks for it).
# Installs what is missing: a JDK (javac, jar), JNA (Debian's libjna-java) and the Kotlin
# compiler (the npm registry's kotlin-compiler, which also carries kotlinx-coroutines) — no Maven
# or Gradle repository is needed.
# Usage: scripts/kotlin-build.sh [debug|release|portable]. `portable` is what a release ships:
# the library built with zig for glibc >= 2.17 on x86-64 and on aarch64 (JNA's linux-x86-64 and
# linux-aarch64 folders), where `release` links against this machine's glibc. Prints the
# classpath to run with, last.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
profile=${1:-debug}
. scripts/tools.sh

command -v javac > /dev/null && command -v jar > /dev/null \
  || { apt-get update -qq && apt-get install -y -qq openjdk-17-jdk-headless > /dev/null; }
jna=/usr/share/java/jna.jar
[ -f "$jna" ] || { apt-get update -qq && apt-get install -y -qq libjna-java > /dev/null; }

if [ ! -x "$kotlin_home/bin/kotlinc" ]; then
  command -v npm > /dev/null || { apt-get update -qq && apt-get install -y -qq nodejs npm > /dev/null; }
  mkdir -p "$kotlin_home/.."
  (cd "$kotlin_home/.." && npm pack --silent "kotlin-compiler@$kotlin_version" > /dev/null \
    && tar xzf "kotlin-compiler-$kotlin_version.tgz" && rm "kotlin-compiler-$kotlin_version.tgz")
  chmod +x "$kotlin_home"/bin/*
fi
kotlinc=$kotlin_home/bin/kotlinc
runtime_cp=$kotlin_home/lib/kotlin-stdlib.jar:$kotlin_home/lib/kotlinx-coroutines-core-jvm.jar:$jna

out=target/kotlin/$profile
rm -rf "$out/gen" "$out/classes" "$out/native"
mkdir -p "$out/classes"
flag=()
# TENURE_UNIFFI_FEATURES=bench adds bench_rust_cycles (scripts/bench-kotlin.sh).
[ -n "${TENURE_UNIFFI_FEATURES:-}" ] && flag+=(--features "tenure-uniffi/$TENURE_UNIFFI_FEATURES")
# The library for one JNA folder: the debug library's symbols are not needed to run it, and are
# most of its size (a release build has none to strip).
place() {
  mkdir -p "$out/native/$1"
  if [ "$profile" = debug ]; then strip --strip-debug -o "$out/native/$1/libtenure_uniffi.so" "$2"; else cp "$2" "$out/native/$1/"; fi
}
case $profile in
  debug | release)
    [ "$profile" = release ] && flag+=(--release)
    cargo build -q -p tenure-uniffi "${flag[@]}" >&2
    lib=target/$profile/libtenure_uniffi.so
    place linux-x86-64 "$lib"
    ;;
  portable)
    . scripts/zig-env.sh
    for arch in aarch64 x86_64; do
      zig_target "$arch-unknown-linux-gnu"
      cargo zigbuild -q --locked --release -p tenure-uniffi --target "$arch-unknown-linux-gnu.2.17" "${flag[@]}" >&2
      lib=target/$arch-unknown-linux-gnu/release/libtenure_uniffi.so
      scripts/elf-check.sh "$lib" "$arch" gnu
      if [ "$arch" = x86_64 ]; then place linux-x86-64 "$lib"; else place linux-aarch64 "$lib"; fi
    done
    # uniffi-bindgen reads the metadata from the symbol table, which zig's link leaves out (the
    # exported symbols stay): the bindings come from this machine's debug build of the same
    # source and features, whose checksums the libraries above carry too.
    cargo build -q -p tenure-uniffi "${flag[@]}" >&2
    lib=target/debug/libtenure_uniffi.so
    ;;
  *)
    echo "scripts/kotlin-build.sh: unknown profile '$profile' (debug, release, portable)" >&2
    exit 2
    ;;
esac
cargo build -q -p tenure-uniffi-bindgen >&2
target/debug/uniffi-bindgen generate --library "$lib" --language kotlin --no-format --out-dir "$out/gen" > /dev/null
python3 bindings/uniffi/kotlin/pooled_status.py "$out/gen/tenure/ffi/tenure.kt"

"$kotlinc" -nowarn -jvm-target 17 -cp "$runtime_cp" -d "$out/classes" \
  "$out/gen" bindings/uniffi/kotlin/src 2>&1 | grep -v '^warning:' >&2 || true
[ -f "$out/classes/tenure/Lock.class" ] || { echo "kotlinc failed" >&2; exit 1; }
rm -f "$out/tenure.jar"
jar --create --file "$out/tenure.jar" -C "$out/classes" . -C "$out/native" .
echo "built $out/tenure.jar ($(du -h "$out/tenure.jar" | cut -f1))" >&2
echo "$root/$out/tenure.jar:$runtime_cp"
