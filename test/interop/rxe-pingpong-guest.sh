#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run --netns): rdma-core's
# ibv_rc_pingpong / ibv_ud_pingpong on rxe_v (10.77.2.1, initial namespace)
# against `qpgate pingpong` on the soft backend in namespace qpgate-peer
# (10.77.2.2), each tool in turn the server. Prints one JSON line per case,
# then one with the kernel's ICRC complaints; rxe-pingpong.test.ts asserts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dev=$QPGATE_VM_NETNS_RXE_DEV
rxe_ip=$QPGATE_VM_NETNS_RXE_IP
ns=$QPGATE_VM_NETNS
peer_ip=$QPGATE_VM_NETNS_IP
iters=${PINGPONG_ITERS:-50}
counters=/sys/class/infiniband/$dev/ports/1/hw_counters
work=$(mktemp -d)

# The RoCEv2 GID of rxe_ip (ibv_*_pingpong needs -g on RoCE).
gidx=$("$root/test/rdma-vm/roce-gid-index" "$dev" "$rxe_ip") || exit 3

# af-packet: our side sees rxe's real IPv4 header (its ID is not 0) and
# verifies every ICRC, strictly.
qpgate() { ip netns exec "$ns" node "$root/bin/qpgate.js" pingpong -a "$peer_ip" --receive-mode af-packet --icrc strict --json -n "$iters" "$@"; }

run_case() {  # transport, who serves (rxe|qpgate), port
  local t=$1 server=$2 port=$3 c_status q_status
  local rcvd0 sent0
  rcvd0=$(cat "$counters/rcvd_pkts"); sent0=$(cat "$counters/sent_pkts")
  if [[ $server == rxe ]]; then
    timeout 120 "ibv_${t}_pingpong" -d "$dev" -g "$gidx" -n "$iters" -p "$port" >"$work/c.out" 2>&1 &
    local c_pid=$!
    timeout 120 bash -c "$(declare -f qpgate); ns=$ns root=$root peer_ip=$peer_ip iters=$iters; qpgate -t $t -p $port -c $rxe_ip" >"$work/q.out" 2>&1
    q_status=$?
    wait $c_pid; c_status=$?
  else
    timeout 120 bash -c "$(declare -f qpgate); ns=$ns root=$root peer_ip=$peer_ip iters=$iters; qpgate -t $t -p $port" >"$work/q.out" 2>&1 &
    local q_pid=$!
    # The C client does not retry its connect: wait until our server says it
    # listens (node starts slowly under emulation; no process per check).
    local deadline=$((SECONDS + 240)) line=""
    until [[ $line == *"waiting for a client"* ]] || ((SECONDS > deadline)); do
      sleep 0.5
      while IFS= read -r line; do [[ $line == *"waiting for a client"* ]] && break; done <"$work/q.out"
    done
    timeout 120 "ibv_${t}_pingpong" -d "$dev" -g "$gidx" -n "$iters" -p "$port" "$peer_ip" >"$work/c.out" 2>&1
    c_status=$?
    wait $q_pid; q_status=$?
  fi
  local rcvd1 sent1
  rcvd1=$(cat "$counters/rcvd_pkts"); sent1=$(cat "$counters/sent_pkts")
  node -e '
    const fs = require("fs");
    const [t, server, cs, qs, rcvd, sent, work] = process.argv.slice(1);
    const q = fs.readFileSync(work + "/q.out", "utf8");
    const last = q.trim().split("\n").pop();
    let result = null; try { result = JSON.parse(last); } catch {}
    console.log(JSON.stringify({ case: `${t} server=${server}`, transport: t, server, cStatus: +cs, qpgateStatus: +qs,
      rxeRcvdDelta: +rcvd, rxeSentDelta: +sent, qpgate: result,
      cOutput: fs.readFileSync(work + "/c.out", "utf8"), qpgateOutput: result ? "" : q }));
  ' "$t" "$server" "$c_status" "$q_status" $((rcvd1 - rcvd0)) $((sent1 - sent0)) "$work"
}

run_case rc rxe 18515
run_case rc qpgate 18516
run_case ud rxe 18517
run_case ud qpgate 18518
node -e 'console.log(JSON.stringify({ dmesgIcrc: process.argv[1] }))' "$(dmesg | grep -i icrc || true)"
