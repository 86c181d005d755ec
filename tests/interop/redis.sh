#!/usr/bin/env bash
# Interop on one Redis server (the machine's, or $TENURE_REDIS_URL), under a fresh key prefix:
# 1. grelmicro 0.44 processes and `tenure lock` processes contend for one lock. Every critical
#    section appends `start <fence> <who>` and `end <fence>` to one log; the check: sections
#    never interleave, and fencing tokens strictly increase across both libraries.
# 2. A leader elected by grelmicro keeps `tenure elect` out until its lease ends; `tenure
#    status` shows it; then grelmicro sees tenure's leader.
# Usage: tests/interop/redis.sh PYTHON TENURE
set -euo pipefail
py=$1 tenure=$2
server=${TENURE_REDIS_URL:-redis://127.0.0.1:6379}
prefix="tenure-interop-$$-$(date +%s%N):"
url="$server/?prefix=$prefix"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
here=$(dirname "$0")
log=$dir/sections.log rounds=4
worker='echo "start $TENURE_FENCING_TOKEN tenure" >> '"$log"'; sleep 0.03; echo "end $TENURE_FENCING_TOKEN" >> '"$log"
pids=()
for _ in 1 2; do
  "$py" "$here/grelmicro_redis.py" lock "$server" "$prefix" interop "$log" "$rounds" & pids+=($!)
  (for _ in $(seq "$rounds"); do "$tenure" --backend "$url" lock interop -- sh -c "$worker" 2>/dev/null; sleep 0.01; done) & pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
awk -v want=$((4 * rounds)) -v store=redis -f "$(dirname "$0")/check_sections.awk" "$log"
# Both wrote the same keys: the lock is free, the counter where the last holder left it.
cli=(redis-cli -u "$server")
[ "$("${cli[@]}" exists "${prefix}lock:interop")" = 0 ] || { echo "the lock key is still there"; exit 1; }
fence=$("${cli[@]}" get "${prefix}fence:lock:interop")
[ "$fence" -ge 16 ] || { echo "fence counter $fence, expected >= 16"; exit 1; }
echo "redis: final fence counter $fence"

# Leader election: grelmicro leads for 2 s; tenure must wait it out, then lead.
"$py" "$here/grelmicro_redis.py" take "$server" "$prefix" leader:svc grelmicro-worker 2
"$tenure" --backend "$url" status svc --json | grep -q '"holder":"grelmicro-worker"' \
  || { echo "tenure status does not show grelmicro's leader"; exit 1; }
start=$(date +%s%N)
"$tenure" --backend "$url" elect svc --lease 5 --renew-deadline 4 --retry-interval 0.1 -- \
  sh -c "\"$py\" \"$here/grelmicro_redis.py\" get \"$server\" \"$prefix\" leader:svc > \"$dir/seen\"" 2> /dev/null
waited_ms=$(( ($(date +%s%N) - start) / 1000000 ))
seen=$(cat "$dir/seen")
echo "redis: tenure led after ${waited_ms} ms (grelmicro's lease: 2000 ms); grelmicro then saw leader $seen"
[ "$waited_ms" -ge 1500 ] || { echo "tenure led while grelmicro's lease was live"; exit 1; }
case $seen in grelmicro-worker|none) echo "grelmicro did not see tenure's leader"; exit 1 ;; esac
"${cli[@]}" --scan --pattern "${prefix}*" | xargs -r "${cli[@]}" del > /dev/null
