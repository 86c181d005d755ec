#!/usr/bin/env bash
# Interop on one SQLite file:
# 1. grelmicro 0.44 processes and `tenure lock` processes contend for one lock. Every critical
#    section appends `start <fence> <who>` and `end <fence>` to one log; the check: sections
#    never interleave, and fencing tokens strictly increase across both libraries.
# 2. A leader elected by grelmicro keeps `tenure elect` out until its lease ends; `tenure
#    status` shows it; then grelmicro sees tenure's leader.
# Usage: tests/interop/sqlite.sh PYTHON TENURE
set -euo pipefail
py=$1 tenure=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
db=$dir/shared.db log=$dir/sections.log rounds=4
worker='echo "start $TENURE_FENCING_TOKEN tenure" >> '"$log"'; sleep 0.03; echo "end $TENURE_FENCING_TOKEN" >> '"$log"
pids=()
for _ in 1 2; do
  "$py" "$(dirname "$0")/grelmicro_sqlite_worker.py" "$db" interop "$log" "$rounds" & pids+=($!)
  (for _ in $(seq "$rounds"); do "$tenure" --backend "sqlite://$db" lock interop -- sh -c "$worker" 2>/dev/null; sleep 0.01; done) & pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
awk -v want=$((4 * rounds)) -v store=sqlite -f "$(dirname "$0")/check_sections.awk" "$log"
# Both read the same rows: grelmicro sees the lock free and the fence where tenure left it.
"$py" - "$db" <<'PY'
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute("SELECT name, token, fence FROM locks WHERE name = 'lock:interop'").fetchone()
assert row[1] is None and row[2] >= 16, row
print("final row:", row)
PY

# Leader election: grelmicro leads for 2 s; tenure must wait it out, then lead.
leader_py="$(dirname "$0")/grelmicro_sqlite_leader.py"
"$py" "$leader_py" take "$db" leader:svc grelmicro-worker 2 > /dev/null
"$tenure" --backend "sqlite://$db" status svc --json | grep '"holder":"grelmicro-worker"' > /dev/null \
  || { echo "tenure status does not show grelmicro's leader"; exit 1; }
start=$(date +%s%N)
"$tenure" --backend "sqlite://$db" elect svc --lease 5 --renew-deadline 4 --retry-interval 0.1 -- \
  sh -c "\"$py\" \"$leader_py\" get \"$db\" leader:svc > \"$dir/seen\"" 2> /dev/null
waited_ms=$(( ($(date +%s%N) - start) / 1000000 ))
seen=$(cat "$dir/seen")
echo "tenure led after ${waited_ms} ms (grelmicro's lease: 2000 ms); grelmicro then saw leader $seen"
[ "$waited_ms" -ge 1500 ] || { echo "tenure led while grelmicro's lease was live"; exit 1; }
case $seen in grelmicro-worker|none) echo "grelmicro did not see tenure's leader"; exit 1 ;; esac
# grelmicro leads again after tenure's leader (who told the store its details): the term's fence is
# still tenure's, its start grelmicro's, and the listing shows no details for grelmicro's leader.
"$py" "$leader_py" take "$db" leader:svc grelmicro-worker 2 > /dev/null
"$tenure" --backend "sqlite://$db" status svc --json | grep '"holder":"grelmicro-worker"' \
  | grep -q '"holder_details":null' || { echo "grelmicro's leader shown with tenure's details"; exit 1; }

