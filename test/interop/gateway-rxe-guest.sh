#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run --netns): `qpgate serve`
# with backend.kind ibv on rxe_v (10.77.2.1, veth-rxe); from namespace
# qpgate-peer (10.77.2.2) on the soft backend (af-packet receive: rxe's IPv4
# ID is not 0, so only the real header verifies its ICRC) a subscriber on
# the gateway's feed and an order session that places and cancels; the
# gateway's QPs as /v1/qps and `rdma res show qp` list them, and /metrics.
# Prints one JSON line; gateway-rxe.test.ts asserts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dev=$QPGATE_VM_NETNS_RXE_DEV
ns=$QPGATE_VM_NETNS
peer_ip=$QPGATE_VM_NETNS_IP
work=$(mktemp -d)
url=http://$QPGATE_VM_NETNS_RXE_IP:7480
counters=/sys/class/infiniband/$dev/ports/1/hw_counters
peer() { timeout 300 ip netns exec "$ns" node "$root/bin/qpgate.js" "$@" --url "$url" --token "$token" --address "$peer_ip" --receive-mode af-packet; }

# rxe routes a group like any destination: out of the veth, not the guest's default route.
ip route add 239.0.0.0/8 dev "$QPGATE_VM_NETNS_RXE_NETDEV"
ip -n "$ns" route add 239.0.0.0/8 dev veth-peer

# node itself in the background (not a function: $! would be a subshell and
# the TERM below would not reach the gateway). A low synthetic rate: under
# TCG a 10k/s feed leaves the control plane slower than the clients' 5 s.
node "$root/bin/qpgate.js" serve --port 7480 --set state.dir="$work/state" --set backend.kind=ibv --set backend.device="$dev" \
  --set control.host=0.0.0.0 --set feeds.synthetic.ratePerSec=200 >"$work/gw.out" 2>&1 &
gw=$!
deadline=$((SECONDS + 300))
until grep -q '"qpgate ready"' "$work/gw.out" || ((SECONDS > deadline)) || ! kill -0 $gw 2>/dev/null; do sleep 1; done
token=$(cat "$work/state/admin.token" 2>/dev/null)
sent0=$(cat "$counters/sent_pkts")
ip netns exec "$ns" cat /proc/net/dev >"$work/peer-dev-before.txt"
peer subscribe --json --count 200 --seconds 120 >"$work/sub.out" 2>"$work/sub.err"
sub_status=$?
ip netns exec "$ns" cat /proc/net/dev >"$work/peer-dev-after.txt"
cat /proc/net/dev >"$work/dev-after.txt"
printf 'buy 1001 100 5\ncancel 1 1001\n' >"$work/orders.txt"
peer order --name rxe-order --account 1 --first-id 1 --linger 20000 --file "$work/orders.txt" --json >"$work/order.out" 2>"$work/order.err" &
order=$!
# While the order session lingers: its RC QP is in both lists.
for _ in $(seq 120); do grep -q '"kind":"cancelAck"' "$work/order.out" 2>/dev/null && break; sleep 1; done
get() { curl -s -H "authorization: Bearer $token" "$url$1"; }
get /v1/device >"$work/device.json"
get /v1/qps >"$work/qps.json"
get /v1/sessions >"$work/sessions.json"
rdma -j res show qp >"$work/rdma-qp.json" 2>&1
wait $order
order_status=$?
sent1=$(cat "$counters/sent_pkts")
get /metrics >"$work/metrics.txt"
kill -TERM $gw
wait $gw
gw_status=$?
# Bad input: a GID entry that is not there, then a port that is down. Each
# start must stop at the device with one line and exit 2.
bad() { timeout 300 node "$root/bin/qpgate.js" serve --port 7481 --set state.dir="$work/bad-$1" --set backend.kind=ibv --set backend.device="$dev" "${@:2}" >"$work/bad-$1.out" 2>&1; echo $? >"$work/bad-$1.status"; }
bad gid --set backend.gidIndex=200
ip link set "$QPGATE_VM_NETNS_RXE_NETDEV" down
for _ in $(seq 30); do grep -q DOWN "/sys/class/infiniband/$dev/ports/1/state" && break; sleep 0.5; done
bad port
node -e '
  const fs = require("fs"); const w = process.argv[1];
  const read = (f) => { try { return fs.readFileSync(w + "/" + f, "utf8"); } catch { return ""; } };
  const json = (f) => { try { return JSON.parse(read(f)); } catch { return null; } };
  const lines = (f) => read(f).split("\n").filter(Boolean);
  console.log(JSON.stringify({ device: json("device.json"), qps: json("qps.json"), sessions: json("sessions.json"), rdmaQp: json("rdma-qp.json"),
    subStatus: +process.argv[2], orderStatus: +process.argv[3], gwStatus: +process.argv[4], rxeSentDelta: +process.argv[5],
    sub: lines("sub.out"), subErr: read("sub.err"), order: lines("order.out"), orderErr: read("order.err"),
    metrics: lines("metrics.txt").filter((l) => /^qpgate_device_/.test(l)),
    bad: Object.fromEntries(["gid", "port"].map((k) => [k, { status: +read("bad-" + k + ".status"), output: read("bad-" + k + ".out") }])),
    netDev: { peerBefore: read("peer-dev-before.txt"), peerAfter: read("peer-dev-after.txt"), gatewayAfter: read("dev-after.txt") }, gwOut: read("gw.out").slice(-20000) }));
' "$work" "$sub_status" "$order_status" "$gw_status" $((sent1 - sent0))
