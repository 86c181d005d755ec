#!/usr/bin/env bash
# Read-write lock interop on one store: grelmicro 0.44 processes (its ReadWriteLock and
# adapter) and `tenure lock --shared` / `--exclusive` processes take one read-write lock in
# turn, reading and writing. Every section appends its start and end to one log; the check
# (check_rw.awk): readers share, never a writer beside a reader or another writer, write fences
# strictly increase, a reader reads the last write's fence. With TENURE_PYTHON (an interpreter with
# the Python package) a process of the package runs grelmicro's code beside them; with
# TENURE_KOTLIN_CP (the JVM package and its test programs) a Kotlin process too.
# Usage: tests/interop/rw.sh sqlite|redis|postgres PYTHON TENURE
set -euo pipefail
kind=$1 py=$2 tenure=$3
dir=$(mktemp -d)
case $kind in
  sqlite)
    url="sqlite://$dir/shared.db" grelmicro_url=$url where=none
    trap 'rm -rf "$dir"' EXIT
    ;;
  redis)
    server=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
    where="tenure-rw-interop-$$-$(date +%s%N):"
    url="$server/?prefix=$where" grelmicro_url=$server
    cli=(redis-cli -u "$server")
    trap 'rm -rf "$dir"; "${cli[@]}" --scan --pattern "${where}*" | xargs -r "${cli[@]}" del > /dev/null' EXIT
    ;;
  postgres)
    server=${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
    where="rw_interop_$$_$(date +%s)"
    url="$server?lock_table=${where}_locks&leader_table=${where}_leaders&schedule_table=${where}_schedules&rwlock_table=${where}_rwlocks"
    grelmicro_url=$server
    trap 'rm -rf "$dir"; psql "$server" -qc "DROP TABLE IF EXISTS ${where}_locks, ${where}_locks_queue, ${where}_locks_details, ${where}_leaders,
        ${where}_schedules, ${where}_rwlocks, ${where}_rwlocks_holders;
      DROP FUNCTION IF EXISTS ${where}_leaders_le_acquire_or_renew_v2, ${where}_locks_queue_acquire,
        ${where}_locks_queue_release, ${where}_locks_queue_hand_over, ${where}_rwlocks_acquire_read_v2,
        ${where}_rwlocks_acquire_write_v2, ${where}_rwlocks_downgrade_v2" > /dev/null 2>&1 || true' EXIT
    ;;
  *) echo "usage: $0 sqlite|redis|postgres PYTHON TENURE" >&2; exit 2 ;;
esac
here=$(dirname "$0")
log=$dir/sections.log rounds=6
reader='echo "read $TENURE_GENERATION tenure" >> '"$log"'; sleep 0.05; echo "done-read $TENURE_GENERATION" >> '"$log"
writer='echo "write $TENURE_FENCING_TOKEN tenure" >> '"$log"'; sleep 0.03; echo "done-write $TENURE_FENCING_TOKEN" >> '"$log"
# Tables and functions exist before anyone races to make them.
"$tenure" --backend "$url" status > /dev/null
pids=()
for n in 1 2; do
  "$py" "$here/grelmicro_rw.py" "$grelmicro_url" "$where" doc "$log" $((rounds + n - 1)) & pids+=($!)
  (for i in $(seq "$rounds"); do
    if [ $(( (i + n) % 2 )) = 0 ]; then side=--shared body=$reader; else side=--exclusive body=$writer; fi
    "$tenure" --backend "$url" lock doc "$side" --lease 10 -- sh -c "$body" 2>/dev/null
    sleep 0.01
  done) & pids+=($!)
done
want=$((4 * rounds + 1)) also=""
if [ -n "${TENURE_PYTHON:-}" ]; then
  "$TENURE_PYTHON" "$here/grelmicro_rw.py" --tenure "$url" none doc "$log" "$rounds" & pids+=($!)
  want=$((want + rounds)) also=python
fi
if [ -n "${TENURE_KOTLIN_CP:-}" ]; then
  java -cp "$TENURE_KOTLIN_CP" tenure.interop.Kotlin_rw_semKt rw "$url" doc "$log" "$rounds" & pids+=($!)
  want=$((want + rounds)) also="$also kotlin"
fi
for pid in "${pids[@]}"; do wait "$pid"; done
awk -v want="$want" -v store="$kind read-write" -v also="$also" -f "$here/check_rw.awk" "$log"
