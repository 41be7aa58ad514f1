#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run --veth): `qpgate serve`
# with backend.kind ibv on rxe_a (10.77.1.1, veth-a), and the clients on
# rxe_b (10.77.1.2, veth-b) with --backend ibv: a subscriber on the feed, an
# order session that places, fills and cancels, a risk session whose
# CMP_SWAP sets the kill switch so that the next order is rejected, and
# `qpgate pingpong --backend ibv` against rdma-core's ibv_rc_pingpong; and
# rxe_a's port down and up again, which the gateway logs.
# Prints one JSON line; clients-ibv.test.ts asserts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
gw_dev=$QPGATE_VM_VETH_A_DEV
cl_dev=$QPGATE_VM_VETH_B_DEV
work=$(mktemp -d)
url=http://$QPGATE_VM_VETH_A_IP:7480
client() { timeout 300 node "$root/bin/qpgate.js" "$@" --url "$url" --token "$token" --backend ibv --device "$cl_dev"; }

# rxe routes a group like any destination: out of veth-a, not the guest's default route.
ip route add 239.0.0.0/8 dev "$QPGATE_VM_VETH_A_NETDEV"

source "$root/test/interop/guest-gateway.sh"
start_ibv_gateway "$gw_dev" 7480 "$work"

t0=$SECONDS
times="ready=$t0"
mark() { times+=" $1=$((SECONDS - t0))"; t0=$SECONDS; }
client subscribe --json --count 200 --seconds 120 >"$work/sub.out" 2>"$work/sub.err"
sub_status=$?
mark subscribe
# Under TCG on a loaded host the control plane can take more than the default 5 s to answer.
# Accounts 1 and 2 in one session: the buy meets the sell of the other account.
printf 'sell 1001 10000 5 id=1\nbuy 1001 10000 3 id=2 account=2\ncancel 1 1001 id=3\n' >"$work/orders.txt"
client order --http-timeout 60000 --name ibv-order --account 1 --account 2 --linger 500 --file "$work/orders.txt" --json >"$work/order.out" 2>"$work/order.err"
order_status=$?
mark order
client risk --http-timeout 60000 --name ibv-risk --account 1 --kill --json >"$work/risk.out" 2>"$work/risk.err"
risk_status=$?
printf 'buy 1001 10000 1 id=10\n' >"$work/killed.txt"
client order --http-timeout 60000 --name ibv-order-2 --account 1 --linger 200 --file "$work/killed.txt" --json >"$work/killed.out" 2>"$work/killed.err"
killed_status=$?
mark risk+killed
# The port goes down and comes back: the gateway logs both device events.
port_state=/sys/class/infiniband/$gw_dev/ports/1/state
ip link set "$QPGATE_VM_VETH_A_NETDEV" down
for _ in $(seq 30); do grep -q DOWN "$port_state" && break; sleep 0.5; done
ip link set "$QPGATE_VM_VETH_A_NETDEV" up
for _ in $(seq 30); do grep -q ACTIVE "$port_state" && break; sleep 0.5; done
for _ in $(seq 30); do grep -q 'IBV_EVENT_PORT_ACTIVE' "$work/gw.out" && break; sleep 0.5; done
mark port-bounce
kill -TERM $gw
wait $gw
gw_status=$?

# qpgate pingpong on rxe_b against ibv_rc_pingpong on rxe_a (-g: the RoCE v2 GID, as the C tool needs).
gidx=$("$root/test/rdma-vm/roce-gid-index" "$gw_dev" "$QPGATE_VM_VETH_A_IP")
timeout 120 ibv_rc_pingpong -d "$gw_dev" -g "$gidx" -n 50 -p 18515 >"$work/c.out" 2>&1 &
c=$!
sleep 1
timeout 120 node "$root/bin/qpgate.js" pingpong --backend ibv --device "$cl_dev" -n 50 -p 18515 --json "$QPGATE_VM_VETH_A_IP" >"$work/pp.out" 2>"$work/pp.err"
pp_status=$?
wait $c
c_status=$?
mark pingpong

node -e '
  const fs = require("fs"); const w = process.argv[1];
  const read = (f) => { try { return fs.readFileSync(w + "/" + f, "utf8"); } catch { return ""; } };
  const lines = (f) => read(f).split("\n").filter(Boolean);
  const [sub, order, risk, killed, gw, pp, c] = process.argv.slice(2).map(Number);
  console.log(JSON.stringify({ status: { sub, order, risk, killed, gw, pp, c }, seconds: process.argv[9],
    sub: lines("sub.out"), subErr: read("sub.err"), order: lines("order.out"), orderErr: read("order.err"),
    risk: lines("risk.out"), riskErr: read("risk.err"), killed: lines("killed.out"), killedErr: read("killed.err"),
    pp: read("pp.out"), ppErr: read("pp.err"), c: read("c.out"), gwOut: read("gw.out").slice(-20000) }));
' "$work" "$sub_status" "$order_status" "$risk_status" "$killed_status" "$gw_status" "$pp_status" "$c_status" "$times"
