#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run --veth): `qpgate serve`
# with backend.kind ibv on rxe_a (10.77.1.1, veth-a) replaying a known feed,
# and the clients on rxe_b (10.77.1.2, veth-b) with --backend ibv: a
# subscriber on the feed; a recorder whose lost frames (tc, on veth-b) come
# back over RC; an order session that places, fills and cancels; a risk
# session whose QP a remote access error makes fatal (it alone ends, and
# /v1/sessions says why); a risk session whose FETCH_ADD completes while the
# gateway process is stopped (one-sided: rxe_a serves it); a risk session
# whose CMP_SWAP sets the kill switch so that the next order is rejected;
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
replay_feed "$work"
start_ibv_gateway "$gw_dev" 7480 "$work" "${replay_args[@]}"

t0=$SECONDS
times="ready=$t0"
# Each step as it ends, also in the run directory (shared with the host): what a timed-out run got to.
mark() { times+=" $1=$((SECONDS - t0))"; t0=$SECONDS; echo "$times" >"${QPGATE_VM_RUN_DIR:-$work}/steps"; }
client subscribe --http-timeout 60000 --json --count 200 --seconds 120 >"$work/sub.out" 2>"$work/sub.err"
sub_status=$?
mark subscribe
# The recorder, with frames of both lines lost on their way into rxe_b: what
# it writes is the published loop byte for byte only if recovery over RC
# (rxe_b -> rxe_a) filled every gap.
lose_feed_frames "$QPGATE_VM_VETH_B_NETDEV"
client record --http-timeout 60000 --recovery --count 300 --seconds 120 --out "$work/rec.ticks" >"$work/rec.out" 2>"$work/rec.err"
rec_status=$?
tc -s filter show dev "$QPGATE_VM_VETH_B_NETDEV" ingress >"$work/tc.txt" 2>&1
tc qdisc del dev "$QPGATE_VM_VETH_B_NETDEV" clsact
mark record
# Under TCG on a loaded host the control plane can take more than the default 5 s to answer,
# and the guest can stall past the default 0.5 s of RC retries: --ack-timeout 18 waits 8.6 s.
# Accounts 1 and 2 in one session: the buy meets the sell of the other account.
node "$root/dist/test/interop/order-answers.js" write "$work/orders.txt"
client order --http-timeout 60000 --ack-timeout 18 --name ibv-order --account 1 --account 2 --linger 500 --file "$work/orders.txt" --json >"$work/order.out" 2>"$work/order.err"
order_status=$?
mark order
# The QP-fatal path. A bystander order session (its requests from a fifo)
# rests an order; a risk session then does a FETCH_AND_ADD on its account's
# local-owned page, which it may only READ: rxe_a answers a remote access
# error and puts the gateway's QP in ERR. That session alone ends, /v1/sessions
# and `qpgate sessions` say what ended it, and the bystander, still connected,
# cancels its order afterwards.
mkfifo "$work/bystander.fifo"
client order --http-timeout 60000 --name ibv-bystander --account 2 --linger 2000 --file "$work/bystander.fifo" --json >"$work/bystander.out" 2>"$work/bystander.err" &
bystander=$!
exec 7<>"$work/bystander.fifo"  # read-write: opening does not wait for the client (one that fails never opens it)
echo 'buy 1001 9000 1 id=20 account=2' >&7
for _ in $(seq 240); do grep -q '"kind":"ack"' "$work/bystander.out" 2>/dev/null && break; sleep 0.5; done
timeout 300 node --input-type=module -e '
  const [root, url, token, dev] = process.argv.slice(1);
  const { RiskClient, RdmaError } = await import(root + "/dist/src/orders/risk-client.js");
  const risk = await RiskClient.connect({ url, token, name: "ibv-fatal", accounts: [1n], device: { kind: "ibv", name: dev }, timeoutMs: 60000 });
  const page = risk.regions.find((r) => r.account === 1n && r.name === "risk.local");
  let status = "IBV_WC_SUCCESS";
  try { await risk.raw("ATOMIC_FETCH_AND_ADD", page.addr + 8n, page.rkey, 1n); } catch (e) { if (!(e instanceof RdmaError)) throw e; status = e.status; }
  const get = async () => (await fetch(url + "/v1/sessions/" + risk.id, { headers: { authorization: "Bearer " + token } })).json();
  let session = await get();
  for (let i = 0; i < 300 && session.connected !== false; i++) { await new Promise((r) => setTimeout(r, 200)); session = await get(); }
  console.log(JSON.stringify({ status, access: page.access, session }));
  process.exit(0);
' "$root" "$url" "$token" "$cl_dev" >"$work/fatal.out" 2>"$work/fatal.err"
timeout 120 node "$root/bin/qpgate.js" sessions --url "$url" --token "$token" >"$work/sessions.txt" 2>&1
curl -s --max-time 60 -H "authorization: Bearer $token" "$url/v1/sessions" >"$work/sessions.json"
echo 'cancel 20 1001 id=21' >&7
exec 7>&-
wait $bystander
bystander_status=$?
mark qp-fatal
# One-sided: a FETCH_ADD from rxe_b completes while the gateway process is stopped (risk-one-sided.ts).
timeout 300 node "$root/dist/test/interop/risk-one-sided.js" "$url" "$token" "$cl_dev" "$gw" >"$work/one-sided.out" 2>"$work/one-sided.err"
one_sided_status=$?
kill -CONT $gw 2>/dev/null  # whatever happened to the helper, the gateway runs on
mark one-sided
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

# A client's port that is not ACTIVE: one line naming the device and the port, exit 2.
ip link set "$QPGATE_VM_VETH_B_NETDEV" down
for _ in $(seq 30); do grep -q DOWN "/sys/class/infiniband/$cl_dev/ports/1/state" && break; sleep 0.5; done
timeout 120 node "$root/bin/qpgate.js" pingpong --backend ibv --device "$cl_dev" --ib-port 1 -n 1 -p 18516 "$QPGATE_VM_VETH_A_IP" >"$work/down.out" 2>&1
down_status=$?

node -e '
  const fs = require("fs"); const w = process.argv[1];
  const read = (f) => { try { return fs.readFileSync(w + "/" + f, "utf8"); } catch { return ""; } };
  const lines = (f) => read(f).split("\n").filter(Boolean);
  const [sub, order, risk, killed, gw, pp, c, bystander, down, rec, oneSided] = process.argv.slice(2).map(Number);
  const json = (f) => { try { return JSON.parse(read(f)); } catch { return null; } };
  const base64 = (f) => { try { return fs.readFileSync(w + "/" + f).toString("base64"); } catch { return ""; } };
  console.log(JSON.stringify({ status: { sub, order, risk, killed, gw, pp, c, bystander, down, rec, oneSided }, seconds: process.argv[13],
    oneSided: json("one-sided.out"), oneSidedErr: read("one-sided.err"), down: read("down.out"),
    recorder: { published: base64("replay/ticks"), recording: base64("rec.ticks"), sub: read("rec.out"), tc: read("tc.txt") }, recErr: read("rec.err"),
    fatal: json("fatal.out"), fatalErr: read("fatal.err"), sessionsTable: read("sessions.txt"), sessions: json("sessions.json"),
    bystander: lines("bystander.out"), bystanderErr: read("bystander.err"),
    sub: lines("sub.out"), subErr: read("sub.err"), order: lines("order.out"), orderErr: read("order.err"),
    risk: lines("risk.out"), riskErr: read("risk.err"), killed: lines("killed.out"), killedErr: read("killed.err"),
    pp: read("pp.out"), ppErr: read("pp.err"), c: read("c.out"), gwOut: read("gw.out").slice(-20000) }));
' "$work" "$sub_status" "$order_status" "$risk_status" "$killed_status" "$gw_status" "$pp_status" "$c_status" "$bystander_status" "$down_status" "$rec_status" "$one_sided_status" "$times"
