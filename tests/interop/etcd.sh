#!/usr/bin/env bash
# Interop on one etcd member this script starts on free loopback ports, with etcd's own tools:
# 1. `etcdctl lock` loops and `tenure lock` processes (with TENURE_NODE_PATH Node processes, with
#    TENURE_PYTHON processes of the Python package) contend for one name in etcd's
#    concurrency.Mutex layout. Every critical section appends `start <fence> <who>` and `end
#    <fence>` to one log (etcdctl's fence: the ETCD_LOCK_REV it gives its command); the check:
#    sections never interleave, and the fences strictly increase across every tool.
# 2. A leader elected by `etcdctl elect` keeps `tenure elect` out until it resigns, then Tenure
#    leads at once; `etcdctl elect --listen` shows Tenure's record; an `etcdctl elect` campaigning
#    meanwhile is not elected until Tenure lets go.
# Usage: tests/interop/etcd.sh TENURE
set -euo pipefail
tenure=$1
here=$(dirname "$0")
# shellcheck source=contenders.sh
. "$here/contenders.sh"
dir=$(mktemp -d)
read -r client peer < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
etcd --name interop --data-dir "$dir/data" \
  --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
  --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
  --initial-cluster "interop=http://127.0.0.1:$peer" > "$dir/etcd.log" 2>&1 &
member=$!
bg=()
cleanup() { kill "${bg[@]}" "$member" 2> /dev/null || true; wait "$member" 2> /dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
etcdctl=(env ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$client") # env execs it: $! is etcdctl's
ctl() { "${etcdctl[@]}" "$@"; }
for _ in $(seq 100); do ctl endpoint health > /dev/null 2>&1 && break; sleep 0.1; done
ctl endpoint health > /dev/null 2>&1 || { cat "$dir/etcd.log"; echo "etcd did not start"; exit 1; }
prefix=i/ url="etcd://127.0.0.1:$client/?prefix=i/"

# 1. One lock, every tool.
log=$dir/sections.log rounds=4
section() { echo "echo \"start $1 $2\" >> $log; sleep 0.03; echo \"end $1\" >> $log"; }
etcd_worker=$(section '$ETCD_LOCK_REV' etcdctl) tenure_worker=$(section '$TENURE_FENCING_TOKEN' tenure)
pids=()
for _ in 1 2; do
  (for _ in $(seq "$rounds"); do ctl lock "${prefix}lock:interop" -- sh -c "$etcd_worker" > /dev/null; sleep 0.01; done) & pids+=($!)
  (for _ in $(seq "$rounds"); do "$tenure" --backend "$url" lock interop -- sh -c "$tenure_worker" 2> /dev/null; sleep 0.01; done) & pids+=($!)
done
contenders=4 also=""
package_contenders "$url" interop "$log" "$rounds"
for pid in "${pids[@]}"; do wait "$pid"; done
awk -v want=$((contenders * rounds)) -v store=etcd -v peer=etcdctl -v also="$also" -f "$here/check_sections.awk" "$log"
left=$(ctl get --prefix --keys-only "${prefix}lock:interop/" | grep -c . || true)
[ "$left" = 0 ] || { echo "$left contender keys left behind"; exit 1; }

# 2. One leader between etcdctl elect and tenure elect.
wait_for() { # FILE SECONDS: until FILE is not empty
  for _ in $(seq $(($2 * 10))); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}
"${etcdctl[@]}" elect "${prefix}leader:svc" etcdctl-leader > "$dir/first" 2>&1 & first=$!; bg+=($first)
wait_for "$dir/first" 5 || { echo "etcdctl elect did not lead"; exit 1; }
"$tenure" --backend "$url" status svc --json | grep '"holder":"etcdctl-leader"' > /dev/null \
  || { echo "tenure status does not show etcdctl's leader"; exit 1; }
"$tenure" --backend "$url" elect svc --lease 5 --renew-deadline 4 --retry-interval 1 -- \
  sh -c "date +%s%N > '$dir/led'; sleep 3" 2> /dev/null & elected=$!
sleep 1.5
[ ! -e "$dir/led" ] || { echo "tenure led while etcdctl elect led"; exit 1; }
resigned=$(date +%s%N)
kill -INT "$first"; wait "$first" 2> /dev/null || true
wait_for "$dir/led" 5 || { echo "tenure did not lead after etcdctl resigned"; exit 1; }
echo "etcd: tenure led $(( ($(cat "$dir/led") - resigned) / 1000000 )) ms after etcdctl elect resigned (its retry interval: 1000 ms)"
timeout 2 "${etcdctl[@]}" elect --listen "${prefix}leader:svc" > "$dir/listen" 2>&1 || true
grep -q '"holder":"' "$dir/listen" \
  || { cat "$dir/listen"; echo "etcdctl elect --listen does not show tenure's record"; exit 1; }
echo "etcd: etcdctl elect --listen shows $(grep -o '"holder":"[^"]*"' "$dir/listen" | head -1)"
"${etcdctl[@]}" elect "${prefix}leader:svc" etcdctl-second > "$dir/second" 2>&1 & second=$!; bg+=($second)
sleep 0.5
[ ! -s "$dir/second" ] || { echo "etcdctl elect led beside tenure"; exit 1; }
wait "$elected"
wait_for "$dir/second" 5 || { echo "etcdctl elect did not lead after tenure let go"; exit 1; }
echo "etcd: one leader at a time between etcdctl elect and tenure elect, both ways"
