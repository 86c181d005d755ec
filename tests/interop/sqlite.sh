#!/usr/bin/env bash
# Interop: grelmicro 0.44 processes and `tenure lock` processes contend for one lock on one SQLite
# file. Every critical section appends `start <fence> <who>` and `end <fence>` to one log; the
# check: sections never interleave, and fencing tokens strictly increase across both libraries.
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
awk -v want=$((4 * rounds)) '
  NR % 2 == 1 { if ($1 != "start") { print "line " NR ": a section started inside another: " $0; bad = 1 }
                if ($2 + 0 <= last) { print "line " NR ": fencing token " $2 " after " last; bad = 1 }
                last = $2 + 0; fence = $2; who[$3]++ }
  NR % 2 == 0 { if ($1 != "end" || $2 != fence) { print "line " NR ": sections interleaved: " $0; bad = 1 } }
  END { sections = NR / 2
        printf "%d sections (grelmicro %d, tenure %d), fencing tokens 1..%d strictly increasing, none overlapping\n", sections, who["grelmicro"], who["tenure"], last
        if (sections != want || who["grelmicro"] == 0 || who["tenure"] == 0) { print "expected " want " sections from both"; bad = 1 }
        exit bad }' "$log"
# Both read the same rows: grelmicro sees the lock free and the fence where tenure left it.
"$py" - "$db" <<'PY'
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute("SELECT name, token, fence FROM locks WHERE name = 'lock:interop'").fetchone()
assert row[1] is None and row[2] >= 16, row
print("final row:", row)
PY
