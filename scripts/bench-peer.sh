#!/usr/bin/env bash
# One-task acquire + release on the memory backend: Tenure on tokio against grelmicro 0.44's
# in-memory Lock, measured in the same run, reported as a ratio.
# Usage: scripts/bench-peer.sh   (builds the grelmicro venv on first use, about 30 s)
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${TENURE_SHARED:-../shared}
py=$(bash "$shared/tools/grelmicro-env.sh" | tail -1)
peer=$("$py" benches/peer/grelmicro_lock.py)
ours=$(cargo bench -q -p tenure-tokio --bench driver 2>/dev/null | sed -n 's/.*one task, acquire + release: *\([0-9]*\) ns.*/\1/p')
echo "one task, acquire + release (memory backend, median batch)"
echo "  grelmicro 0.44 (asyncio):  $peer ns per cycle"
echo "  tenure on tokio:           $ours ns per cycle"
awk -v p="$peer" -v o="$ours" 'BEGIN { printf "  tenure is %.0fx faster\n", p / o }'
