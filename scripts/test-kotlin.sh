#!/usr/bin/env bash
# The JVM package as users get it (scripts/kotlin-build.sh: the jar carrying the native library),
# tested on the machine's Java 17: the Kotlin suite on every store (bindings/uniffi/kotlin/test),
# a Java program written the way Java users write it, the README's Kotlin quick start, and a JVM
# that returns from main while an election, a keep-alive and a waiting acquire run (it must exit;
# with close() first, leadership must be released). Then the Swift bindings are generated from
# the same library and checked to have the Kotlin API's shape (no Swift toolchain here).
# Prints the classpath of the package and its test programs last (interop runs them).
# --build builds the package and the test programs only (what the interop stage needs alone);
# --test runs them from what an earlier --build printed (scripts/test.sh builds while other tests
# run).
# Usage: scripts/test-kotlin.sh [--build | --test CLASSPATH]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-all}
. scripts/tools.sh
kotlinc=$kotlin_home/bin/kotlinc
out=target/kotlin/debug
redis=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
postgres=${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}

case $mode in
  --test)
    [ "${2:-}" != "${2#"$root/$out/tests.jar:"}" ] \
      || { echo "scripts/test-kotlin.sh: --test takes what --build printed ($root/$out/tests.jar:…)" >&2; exit 2; }
    [ -f "$out/tests.jar" ] || { echo "scripts/test-kotlin.sh: nothing built in $out" >&2; exit 2; }
    cp=${2#"$root/$out/tests.jar:"}
    ;;
  --build | all)
    cp=$(scripts/kotlin-build.sh debug | tail -1)
    # The tests, the interop contenders and the Jepsen harness's client, compiled against the jar
    # as a user's code would be.
    rm -rf "$out/tests.jar" "$out/java"
    "$kotlinc" -nowarn -jvm-target 17 -cp "$cp" -d "$out/tests.jar" bindings/uniffi/kotlin/test tests/interop/kotlin_lock.kt tests/interop/kotlin_rw_sem.kt tests/jepsen/clients/worker.kt \
      2>&1 | grep -v '^warning:' >&2 || true
    [ -f "$out/tests.jar" ] || { echo "kotlinc failed on the tests" >&2; exit 1; }
    javac -d "$out/java" -cp "$cp" bindings/uniffi/kotlin/java/JavaUsers.java
    if [ "$mode" = --build ]; then
      echo "$root/$out/tests.jar:$cp"
      exit 0
    fi
    ;;
  *) sed -n 2,13p "$0" >&2; exit 2 ;;
esac
run=(java -cp "$root/$out/tests.jar:$root/$out/java:$cp")

# The suite reads GREL_LOCK_KOTLIN_ENV_LEASE_DURATION to check the GREL_* configuration.
GREL_LOCK_KOTLIN_ENV_LEASE_DURATION=7 "${run[@]}" tenure.test.MainKt >&2

db=$(mktemp -d)
for url in "memory:" "sqlite://$db/java.db" "$redis/?prefix=tenure-kotlin-java-$$:" \
  "$postgres?lock_table=kotlin_java_$$_locks&leader_table=kotlin_java_$$_leaders&schedule_table=kotlin_java_$$_schedules"; do
  "${run[@]}" JavaUsers "$url" >&2
done

# The README's Kotlin and Java examples, compiled and run as a user would paste them.
scripts/readme-example.sh kotlin > "$db/Quickstart.kt"
scripts/readme-example.sh java > "$db/Quickstart.java"
"$kotlinc" -nowarn -jvm-target 17 -cp "$cp" -d "$db/quickstart" "$db/Quickstart.kt" 2>&1 | grep -v '^warning:' >&2 || true
javac -d "$db/quickstart" -cp "$cp" "$db/Quickstart.java"
java -cp "$db/quickstart:$cp" QuickstartKt >&2
java -cp "$db/quickstart:$cp" Quickstart >&2
rm -f /tmp/tenure-quickstart-kotlin.db* /tmp/tenure-quickstart-java.db*

# A JVM returning from main while Tenure works in the background exits at once; close() first
# releases leadership (the record is gone). Without it the lease is left to expire, unless the
# collector frees the election on the way out, which also releases it (so that is not checked).
for mode in return close; do
  prefix="tenure-kotlin-exit-$$-$mode:"
  start=$(date +%s%N)
  timeout 60 "${run[@]}" tenure.test.ExitKt "$redis/?prefix=$prefix" svc "$mode" >&2 \
    || { echo "the JVM did not exit by itself ($mode)" >&2; exit 1; }
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  leader=$(redis-cli -u "$redis" exists "${prefix}le_us:leader:svc")
  echo "exit ($mode): the JVM exited ${ms} ms after it started; leader record present: $leader" >&2
  [ "$ms" -lt 30000 ] || { echo "the JVM took ${ms} ms to exit" >&2; exit 1; }
  [ "$mode" = return ] || [ "$leader" = 0 ] || { echo "the leader record is still there after close()" >&2; exit 1; }
done
rm -rf "$db"

# Swift: generated from the same library, with the Kotlin API's shape.
rm -rf target/swift
target/debug/uniffi-bindgen generate --library target/debug/libtenure_uniffi.so --language swift --no-format \
  --out-dir target/swift > /dev/null
ls target/swift/Tenure.swift target/swift/TenureFFI.h target/swift/TenureFFI.modulemap > /dev/null
python3 bindings/uniffi/check_shape.py "$out/gen/tenure/ffi/tenure.kt" target/swift/Tenure.swift >&2

# What the tests left on the machine's stores.
scripts/clean-stores.sh 'tenure-kotlin*' kotlin
echo "$root/$out/tests.jar:$cp"
