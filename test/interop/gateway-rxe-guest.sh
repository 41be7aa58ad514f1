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

source "$root/test/interop/guest-gateway.sh"
replay_feed "$work"
lose_feed_frames veth-peer "$ns"
start_ibv_gateway "$dev" 7480 "$work" "${replay_args[@]}"
sent0=$(cat "$counters/sent_pkts")
ip netns exec "$ns" cat /proc/net/dev >"$work/peer-dev-before.txt"
# Under TCG on a loaded host the control plane can take more than the default 5 s to answer.
peer record --http-timeout 60000 --recovery --count 300 --seconds 120 --out "$work/sub.ticks" >"$work/sub.out" 2>"$work/sub.err"
sub_status=$?
tc -n "$ns" -s filter show dev veth-peer ingress >"$work/tc.txt" 2>&1
ip netns exec "$ns" cat /proc/net/dev >"$work/peer-dev-after.txt"
cat /proc/net/dev >"$work/dev-after.txt"
# Accounts 1 and 2 in one session: the buy meets the sell of the other account.
node "$root/dist/test/interop/order-answers.js" write "$work/orders.txt"
# Under TCG on a loaded host the control plane can take more than the default 5 s to answer,
# and the guest can stall past the default 0.5 s of RC retries (2^14 × 4.096 µs × 8): 2^18, 8.6 s.
peer order --http-timeout 60000 --ack-timeout 18 --name rxe-order --account 1 --account 2 --linger 20000 --file "$work/orders.txt" --json >"$work/order.out" 2>"$work/order.err" &
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

# SIGKILL and a restart on the state dir: the acked orders are in the journal.
mkfifo "$work/crash.fifo"
exec 8<>"$work/crash.fifo"
timeout 600 ip netns exec "$ns" node "$root/dist/test/interop/orders-crash.js" "$url" "$token" "$peer_ip" <&8 >"$work/crash.out" 2>"$work/crash.err" &
crash=$!
for _ in $(seq 480); do grep -q '^acked' "$work/crash.out" 2>/dev/null && break; kill -0 $crash 2>/dev/null || break; sleep 0.5; done
kill -KILL $gw
wait $gw
killed_status=$?
mv "$work/gw.out" "$work/gw-killed.out"
start_ibv_gateway "$dev" 7480 "$work" "${replay_args[@]}"
echo "$url $token" >&8
wait $crash
crash_status=$?
exec 8>&-
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
  const lastJson = (f) => { try { return JSON.parse(lines(f).pop()); } catch { return null; } };
  const base64 = (f) => { try { return fs.readFileSync(w + "/" + f).toString("base64"); } catch { return ""; } };
  console.log(JSON.stringify({ device: json("device.json"), qps: json("qps.json"), sessions: json("sessions.json"), rdmaQp: json("rdma-qp.json"),
    subStatus: +process.argv[2], orderStatus: +process.argv[3], gwStatus: +process.argv[4], rxeSentDelta: +process.argv[5],
    recording: base64("sub.ticks"), published: base64("replay/ticks"), sub: read("sub.out"), subErr: read("sub.err"), tc: read("tc.txt"),
    crash: lastJson("crash.out"), crashOut: read("crash.out"), crashErr: read("crash.err"), crashStatus: +process.argv[6], killedStatus: +process.argv[7], order: lines("order.out"), orderErr: read("order.err"),
    metrics: lines("metrics.txt").filter((l) => /^qpgate_device_/.test(l)),
    bad: Object.fromEntries(["gid", "port"].map((k) => [k, { status: +read("bad-" + k + ".status"), output: read("bad-" + k + ".out") }])),
    netDev: { peerBefore: read("peer-dev-before.txt"), peerAfter: read("peer-dev-after.txt"), gatewayAfter: read("dev-after.txt") }, gwOut: read("gw-killed.out").slice(-10000) + "\n--- restarted:\n" + read("gw.out").slice(-10000) }));
' "$work" "$sub_status" "$order_status" "$gw_status" $((sent1 - sent0)) "$crash_status" "$killed_status"
