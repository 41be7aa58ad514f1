#!/usr/bin/env bash
# The guest side of bench/orders/failover-ibv.ts (test/rdma-vm/run --veth
# --veth2): the gateway on rxe_a with backend.alternateDevice rxe_c, its
# control plane reached over loopback, and failover-ibv-client.js for RUNS
# ($1) runs. Prints the client's JSON line, or {"error": ...}.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
source "$root/test/interop/guest-gateway.sh"
start_ibv_gateway "$QPGATE_VM_VETH_A_DEV" 7480 "$work" --set backend.alternateDevice="$QPGATE_VM_VETH_C_DEV"
timeout 900 node "$root/dist/bench/orders/failover-ibv-client.js" http://127.0.0.1:7480 "$token" "$QPGATE_VM_VETH_B_DEV" "$QPGATE_VM_VETH_D_DEV" "$1" \
  "$QPGATE_VM_VETH_A_NETDEV" "$QPGATE_VM_VETH_B_NETDEV" "$QPGATE_VM_VETH_C_NETDEV" "$QPGATE_VM_VETH_D_NETDEV" >"$work/out" 2>"$work/err" ||
  node -e 'console.log(JSON.stringify({ error: require("fs").readFileSync(process.argv[1], "utf8").slice(-4000) }))' "$work/err"
cat "$work/out"
kill -TERM $gw
wait $gw
