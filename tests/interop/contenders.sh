# Sourced by the interop scripts: the Node, Python and JVM package processes that contend beside
# the others when their paths are given (TENURE_NODE_PATH, TENURE_PYTHON, TENURE_KOTLIN_CP: the
# classpath scripts/test-kotlin.sh prints). Appends their pids to
# `pids`, counts them in `contenders` and names them in `also`; needs `here`.
package_contenders() {
  local url=$1 name=$2 log=$3 rounds=$4
  if [ -n "${TENURE_NODE_PATH:-}" ]; then
    for _ in 1 2; do
      NODE_PATH=$TENURE_NODE_PATH node "$here/node_lock.cjs" "$url" "$name" "$log" "$rounds" & pids+=($!)
    done
    contenders=$((contenders + 2)) also="$also node"
  fi
  if [ -n "${TENURE_PYTHON:-}" ]; then
    "$TENURE_PYTHON" "$here/tenure_py_lock.py" "$url" "$name" "$log" "$rounds" & pids+=($!)
    contenders=$((contenders + 1)) also="$also python"
  fi
  if [ -n "${TENURE_KOTLIN_CP:-}" ]; then
    java -cp "$TENURE_KOTLIN_CP" tenure.interop.Kotlin_lockKt "$url" "$name" "$log" "$rounds" & pids+=($!)
    contenders=$((contenders + 1)) also="$also kotlin"
  fi
}
