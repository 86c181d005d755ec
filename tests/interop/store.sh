#!/usr/bin/env bash
# Interop on one Redis server ($TENURE_REDIS_URL, default the machine's) under a fresh key prefix,
# or on one PostgreSQL database ($TENURE_POSTGRES_URL, default the machine's `test`) on fresh
# tables:
# 1. grelmicro 0.44 processes and `tenure lock` processes contend for one lock. Every critical
#    section appends `start <fence> <who>` and `end <fence>` to one log; the check: sections
#    never interleave, and fencing tokens strictly increase across both libraries.
# 2. A leader elected by grelmicro keeps `tenure elect` out until its lease ends; `tenure
#    status` shows it; then grelmicro sees tenure's leader.
# 3. `tenure locks` names a Python package holder, a Node waiter in its line and a grelmicro
#    holder of another name (who_holds.py; with TENURE_NODE_PATH).
# With TENURE_NODE_PATH (a node_modules holding the npm package) Node processes contend too, and
# with TENURE_PYTHON (an interpreter with the Python package) processes of the Python package.
# Usage: tests/interop/store.sh redis|postgres PYTHON TENURE
set -euo pipefail
kind=$1 py=$2 tenure=$3
dir=$(mktemp -d)
case $kind in
  redis)
    server=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
    where="tenure-interop-$$-$(date +%s%N):"
    url="$server/?prefix=$where"
    cli=(redis-cli -u "$server")
    trap 'rm -rf "$dir"; "${cli[@]}" --scan --pattern "${where}*" | xargs -r "${cli[@]}" del > /dev/null' EXIT
    ;;
  postgres)
    server=${TENURE_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}
    where="interop_$$_$(date +%s)"
    url="$server?lock_table=${where}_locks&leader_table=${where}_leaders&schedule_table=${where}_schedules"
    trap 'rm -rf "$dir"; psql "$server" -qc "DROP TABLE IF EXISTS ${where}_locks, ${where}_locks_queue, ${where}_locks_details, ${where}_leaders, ${where}_schedules;
      DROP FUNCTION IF EXISTS ${where}_leaders_le_acquire_or_renew_v2, ${where}_locks_queue_acquire,
        ${where}_locks_queue_release, ${where}_locks_queue_hand_over" > /dev/null 2>&1 || true' EXIT
    ;;
  *) echo "usage: $0 redis|postgres PYTHON TENURE" >&2; exit 2 ;;
esac
here=$(dirname "$0")
# shellcheck source=contenders.sh
. "$here/contenders.sh"
grelmicro=("$py" "$here/grelmicro_store.py")
log=$dir/sections.log rounds=4
worker='echo "start $TENURE_FENCING_TOKEN tenure" >> '"$log"'; sleep 0.03; echo "end $TENURE_FENCING_TOKEN" >> '"$log"
pids=()
for _ in 1 2; do
  "${grelmicro[@]}" lock "$server" "$where" interop "$log" "$rounds" & pids+=($!)
  (for _ in $(seq "$rounds"); do "$tenure" --backend "$url" lock interop -- sh -c "$worker" 2>/dev/null; sleep 0.01; done) & pids+=($!)
done
contenders=4 also=""
package_contenders "$url" interop "$log" "$rounds"
for pid in "${pids[@]}"; do wait "$pid"; done
awk -v want=$((contenders * rounds)) -v store="$kind" -v also="$also" -f "$here/check_sections.awk" "$log"
# Both wrote the same records: the lock is free, the fence where the last holder left it.
if [ "$kind" = redis ]; then
  [ "$("${cli[@]}" exists "${where}lock:interop")" = 0 ] || { echo "the lock key is still there"; exit 1; }
  fence=$("${cli[@]}" get "${where}fence:lock:interop")
else
  row=$(psql "$server" -Atc "SELECT coalesce(token, 'free'), fence FROM ${where}_locks WHERE name = 'lock:interop'")
  [ "${row%%|*}" = free ] || { echo "the lock is still held: $row"; exit 1; }
  fence=${row##*|}
fi
[ "$fence" -ge 16 ] || { echo "fence $fence, expected >= 16"; exit 1; }
echo "$kind: final fence $fence"

# A grelmicro holder's lock revoked by `tenure revoke`: what grelmicro sees (docs/interop.md).
"${grelmicro[@]}" revoked "$server" "$where" revoked "$tenure" "$url" | sed "s/^/$kind: grelmicro revoked: /"

# Who holds what (`tenure locks`): a holder through the Python package, a Node waiter in its line,
# and a grelmicro holder of another name, each shown with what it told the store.
if [ -n "${TENURE_NODE_PATH:-}" ]; then
  "$py" "$here/who_holds.py" "$kind" "$url" "$server" "$where" "$tenure" "$TENURE_NODE_PATH"
fi

# Leader election: grelmicro leads for 2 s; tenure must wait it out, then lead.
"${grelmicro[@]}" take "$server" "$where" leader:svc grelmicro-worker 2
"$tenure" --backend "$url" status svc --json | grep '"holder":"grelmicro-worker"' > /dev/null \
  || { echo "tenure status does not show grelmicro's leader"; exit 1; }
start=$(date +%s%N)
"$tenure" --backend "$url" elect svc --lease 5 --renew-deadline 4 --retry-interval 0.1 -- \
  sh -c "\"$py\" \"$here/grelmicro_store.py\" get \"$server\" \"$where\" leader:svc > \"$dir/seen\"" 2> /dev/null
waited_ms=$(( ($(date +%s%N) - start) / 1000000 ))
seen=$(cat "$dir/seen")
echo "$kind: tenure led after ${waited_ms} ms (grelmicro's lease: 2000 ms); grelmicro then saw leader $seen"
[ "$waited_ms" -ge 1500 ] || { echo "tenure led while grelmicro's lease was live"; exit 1; }
case $seen in grelmicro-worker|none) echo "grelmicro did not see tenure's leader"; exit 1 ;; esac
# grelmicro leads again after tenure's leader (who told the store its details): the term's fence is
# still tenure's, its start grelmicro's, and the listing shows no details for grelmicro's leader.
"${grelmicro[@]}" take "$server" "$where" leader:svc grelmicro-worker 2
"$tenure" --backend "$url" status svc --json | grep '"holder":"grelmicro-worker"' \
  | grep -q '"holder_details":null' || { echo "$kind: grelmicro's leader shown with tenure's details"; exit 1; }
