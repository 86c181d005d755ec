#!/usr/bin/env bash
# Tenure beside grelmicro 0.44, measured in the same run and reported as ratios:
#   - one task, acquire + release on the memory backend (tenure on tokio vs grelmicro's asyncio);
#   - one task, acquire + release on a SQLite file (synchronous=full, both libraries' default).
# Usage: scripts/bench-peer.sh   (builds the grelmicro venv on first use, about 1-2 min)
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash scripts/grelmicro-env.sh | tail -1)

peer=$("$py" benches/peer/grelmicro_lock.py)
ours=$(cargo bench -q -p tenure-tokio --bench driver 2>/dev/null | sed -n 's/.*one task, acquire + release: *\([0-9]*\) ns.*/\1/p')
echo "one task, acquire + release (memory backend, median batch)"
echo "  grelmicro 0.44 (asyncio):  $peer ns per cycle"
echo "  tenure on tokio:           $ours ns per cycle"
awk -v p="$peer" -v o="$ours" 'BEGIN { printf "  tenure is %.0fx faster\n", p / o }'

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sqlite=$(cargo bench -q -p tenure-sqlite --bench sqlite 2>/dev/null)
for mode in full normal; do
  peer=$("$py" benches/peer/grelmicro_sqlite_lock.py "$dir" "$mode")
  ours=$(echo "$sqlite" | sed -n "s/.*synchronous=$mode: *tenure *\([0-9.]*\) us.*/\1/p")
  floor=$(echo "$sqlite" | sed -n "s/.*synchronous=$mode: .*floor *\([0-9.]*\) us.*/\1/p")
  echo "one task, acquire + release (SQLite file, synchronous=$mode, median batch)"
  echo "  grelmicro 0.44:            $peer us per cycle"
  echo "  tenure on tokio:           $ours us per cycle (floor: the same statements on one connection, $floor us)"
  awk -v p="$peer" -v o="$ours" 'BEGIN { printf "  tenure / grelmicro = %.2f\n", o / p }'
done
