#!/usr/bin/env bash
# Semaphore interop on one store: `tenure lock --permits 2` processes, processes of the Python
# package (PYTHON) and, with TENURE_NODE_PATH, of the npm package and, with TENURE_KOTLIN_CP, of the
# JVM package hold permits of one semaphore in turn. Every section appends its start and end to one log; the check (check_semaphore.awk): never
# more than 2 holders at once, no fencing token granted twice, holders shared the semaphore.
# Usage: tests/interop/semaphore.sh sqlite|redis|postgres PYTHON TENURE
set -euo pipefail
kind=$1 py=$2 tenure=$3
dir=$(mktemp -d)
case $kind in
  sqlite)
    url="sqlite://$dir/shared.db"
    trap 'rm -rf "$dir"' EXIT
    ;;
  redis)
    server=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
    where="tenure-sem-interop-$$-$(date +%s%N):"
    url="$server/?prefix=$where"
    cli=(redis-cli -u "$server")
    trap 'rm -rf "$dir"; "${cli[@]}" --scan --pattern "${where}*" | xargs -r "${cli[@]}" del > /dev/null' EXIT
    ;;
  postgres)
    server=${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
    where="sem_interop_$$_$(date +%s)"
    url="$server?lock_table=${where}_locks&leader_table=${where}_leaders&schedule_table=${where}_schedules&rwlock_table=${where}_rwlocks&semaphore_table=${where}_semaphores"
    trap 'rm -rf "$dir"; psql "$server" -qAt -c "
      DO \$\$ DECLARE t text; BEGIN
        FOR t IN SELECT tablename FROM pg_tables WHERE tablename LIKE '"'"'${where}%'"'"' LOOP EXECUTE '"'"'DROP TABLE '"'"' || quote_ident(t) || '"'"' CASCADE'"'"'; END LOOP;
        FOR t IN SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname LIKE '"'"'${where}%'"'"' LOOP EXECUTE '"'"'DROP FUNCTION '"'"' || t; END LOOP;
      END \$\$" > /dev/null 2>&1 || true' EXIT
    ;;
  *) echo "usage: $0 sqlite|redis|postgres PYTHON TENURE" >&2; exit 2 ;;
esac
here=$(dirname "$0")
log=$dir/sections.log rounds=6
body='echo "in $TENURE_FENCING_TOKEN tenure" >> '"$log"'; sleep 0.05; echo "out $TENURE_FENCING_TOKEN" >> '"$log"
# Tables and functions exist before anyone races to make them.
"$tenure" --backend "$url" status > /dev/null
pids=()
for n in 1 2; do
  (for i in $(seq "$rounds"); do
    "$tenure" --backend "$url" lock pool --permits 2 --lease 10 -- sh -c "$body" 2>/dev/null
    sleep 0.01
  done) & pids+=($!)
  "$py" "$here/semaphore_py.py" "$url" pool 2 "$log" "$rounds" & pids+=($!)
done
want=$((4 * rounds)) kinds="tenure python"
if [ -n "${TENURE_NODE_PATH:-}" ]; then
  NODE_PATH=$TENURE_NODE_PATH node "$here/semaphore_node.cjs" "$url" pool 2 "$log" "$rounds" & pids+=($!)
  want=$((want + rounds)) kinds="$kinds node"
fi
if [ -n "${TENURE_KOTLIN_CP:-}" ]; then
  java -cp "$TENURE_KOTLIN_CP" tenure.interop.Kotlin_rw_semKt semaphore "$url" pool 2 "$log" "$rounds" & pids+=($!)
  want=$((want + rounds)) kinds="$kinds kotlin"
fi
for pid in "${pids[@]}"; do wait "$pid"; done
awk -v store="$kind" -v permits=2 -v want="$want" -v kinds="$kinds" -f "$here/check_semaphore.awk" "$log"
