#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run --veth --veth2): `qpgate
# serve` with backend.kind ibv on rxe_a (10.77.1.1) and backend.alternateDevice
# rxe_c (10.77.3.1), a second link; the clients on rxe_b with rxe_d as their
# alternate device, and a feed subscriber with recovery there too
# (failover-orders.ts, failover-feed.ts). The control plane is reached over
# the guest's loopback, as a management network would carry it: the links
# carry only RoCE. Mid-stream the first link stops carrying anything; rxe has
# no automatic path migration, so the clients fail over at the application
# level. Prints one JSON line; failover-ibv.test.ts asserts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
url=http://127.0.0.1:7480

source "$root/test/interop/guest-gateway.sh"
start_ibv_gateway "$QPGATE_VM_VETH_A_DEV" 7480 "$work" --set backend.alternateDevice="$QPGATE_VM_VETH_C_DEV"

timeout 600 node "$root/dist/test/interop/failover-orders.js" "$url" "$token" "$QPGATE_VM_VETH_B_DEV" "$QPGATE_VM_VETH_D_DEV" \
  "$QPGATE_VM_VETH_D_NETDEV" "$QPGATE_VM_VETH_A_NETDEV" "$QPGATE_VM_VETH_B_NETDEV" >"$work/run.out" 2>"$work/run.err"
run_status=$?
timeout 120 node "$root/bin/qpgate.js" sessions --url "$url" --token "$token" >"$work/sessions.txt" 2>&1
kill -TERM $gw
wait $gw
gw_status=$?

node -e '
  const fs = require("fs"); const w = process.argv[1];
  const read = (f) => { try { return fs.readFileSync(w + "/" + f, "utf8"); } catch { return ""; } };
  let run = null; try { run = JSON.parse(read("run.out")); } catch {}
  console.log(JSON.stringify({ status: { run: Number(process.argv[2]), gw: Number(process.argv[3]) }, run, runOut: read("run.out").slice(-4000),
    runErr: read("run.err").slice(-8000), sessionsTable: read("sessions.txt"), gwOut: read("gw.out").slice(-20000) }));
' "$work" "$run_status" "$gw_status"
