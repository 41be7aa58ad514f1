#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run --netns): RoCEv2 inside
# IPsec ESP (security.ipsec). Prints one JSON line per case; esp.test.ts asserts.
#
# soft: `qpgate serve` on the soft backend in a namespace of its own
#   (qpgate-gw, 10.77.3.1: rxe's UDP socket holds 4791 in the initial one)
#   with requireEncryption and mode 'keys' (it installs its SAs); the peer
#   namespace (10.77.3.2) gets the mirror SAs from this script. A subscriber
#   that recovers its late join over RC and an order session run while
#   tshark captures the link. Then the same with the peer's key to the
#   gateway wrong, a gateway with a second link whose session migrates
#   there when the first goes down, and a start with a key file others may read.
# rxe: ibv_rc_pingpong on rxe_v (10.77.2.1) against `qpgate pingpong` in
#   qpgate-peer (10.77.2.2) with ESP SAs on both sides, captured on veth-rxe.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ns=$QPGATE_VM_NETNS
gwns=qpgate-gw
gw_ip=10.77.3.1
peer_ip=10.77.3.2
work=$([[ ${ESP_TRACE:-} == 1 ]] && echo "$QPGATE_VM_RUN_DIR/work" || mktemp -d)
mkdir -p "$work"
# ESP_TRACE=1: each step to $work/trace (the run directory is shared with the host).
[[ ${ESP_TRACE:-} == 1 ]] && { exec 19>"$work/trace"; BASH_XTRACEFD=19; set -x; }
modprobe esp4 && modprobe xfrm_user || exit 3

# Keys: rfc4106(gcm(aes)) AES-256 + salt, 72 hex digits each.
key() { printf '%s' "$1" | sha512sum | cut -c1-72; }
mkkey() { (umask 077; key "$1" >"$work/$1.key"); }
for k in to-peer to-gw feed wrong; do mkkey $k; done
AEAD='rfc4106(gcm(aes))'

ip netns add $gwns
ip link add esp-gw netns $gwns type veth peer name esp-peer netns "$ns"
ip -n $gwns addr add $gw_ip/24 dev esp-gw
ip -n "$ns" addr add $peer_ip/24 dev esp-peer
for n in $gwns "$ns"; do ip -n $n link set lo up; done
ip -n $gwns link set esp-gw up
ip -n "$ns" link set esp-peer up
ip -n $gwns route add 239.0.0.0/8 dev esp-gw
ip -n "$ns" route add 239.0.0.0/8 dev esp-peer

# The peer's side of the SAs the gateway installs (xfrm-keys.ts: UDP, no port).
peer_sas() {  # key of the peer -> gateway SA
  local n=$1 k=$2
  ip -n $n xfrm state flush; ip -n $n xfrm policy flush
  ip -n $n xfrm state add src $peer_ip dst $gw_ip proto esp spi 0x1002 mode transport aead "$AEAD" 0x$(cat "$work/$k.key") 128
  ip -n $n xfrm state add src $gw_ip dst $peer_ip proto esp spi 0x1001 mode transport aead "$AEAD" 0x$(cat "$work/to-peer.key") 128
  ip -n $n xfrm policy add src $peer_ip/32 dst $gw_ip/32 proto udp dir out tmpl src $peer_ip dst $gw_ip proto esp mode transport
  ip -n $n xfrm policy add src $gw_ip/32 dst $peer_ip/32 proto udp dir in tmpl src $gw_ip dst $peer_ip proto esp mode transport
  for g in 1 2; do
    ip -n $n xfrm state add src $gw_ip dst 239.77.0.$g proto esp spi 0x200$g mode transport aead "$AEAD" 0x$(cat "$work/feed.key") 128
    ip -n $n xfrm policy add src $gw_ip/32 dst 239.77.0.$g/32 proto udp dir in tmpl src $gw_ip dst 239.77.0.$g proto esp mode transport
  done
}

cat >"$work/security.yaml" <<YAML
security:
  requireEncryption: true
  ipsec:
    mode: keys
    peers:
      - {address: $peer_ip, out: {spi: 4097, keyFile: $work/to-peer.key}, in: {spi: 4098, keyFile: $work/to-gw.key}}
      - {address: 239.77.0.1, out: {spi: 8193, keyFile: $work/feed.key}}
      - {address: 239.77.0.2, out: {spi: 8194, keyFile: $work/feed.key}}
YAML

url=http://$gw_ip:7480
serve() {  # dir, extra options
  local dir=$1; shift
  mkdir -p "$dir"
  ip netns exec $gwns node "$root/bin/qpgate.js" serve --config "$work/security.yaml" --port 7480 --set state.dir="$dir/state" \
    --set backend.kind=soft --set backend.device=esp-gw --set backend.address=$gw_ip \
    --set control.host=0.0.0.0 --set control.allowPlaintextOnNetwork=true --set feeds.synthetic.ratePerSec=50 "$@" >"$dir/gw.out" 2>&1 &
  gw=$!
  local deadline=$((SECONDS + 300))
  until grep -q '"qpgate ready"' "$dir/gw.out" || ((SECONDS > deadline)) || ! kill -0 $gw 2>/dev/null; do sleep 1; done
  token=$(cat "$dir/state/admin.token" 2>/dev/null)
}
peer() { timeout 200 ip netns exec "$ns" node "$root/bin/qpgate.js" "$@" --url "$url" --token "$token" --address $peer_ip; }
get() { ip netns exec "$ns" curl -s -m 20 -H "authorization: Bearer $token" "$url$1"; }
# From the gateway's own namespace (its loopback address): for when the link the peer reaches it by is down.
gwget() { ip netns exec $gwns curl -s -m 20 -H "authorization: Bearer $token" "http://127.0.0.1:7480$1"; }
capture() {  # namespace, interface, file: until stop_capture
  ip netns exec "$1" tshark -i "$2" -w "$3" >"$3.err" 2>&1 &
  cap=$!
  local deadline=$((SECONDS + 60))
  until grep -q 'Capturing on' "$3.err" || ((SECONDS > deadline)); do sleep 0.5; done
}
stop_capture() { sleep 1; kill -INT $cap; timeout 30 tail --pid=$cap -f /dev/null; kill -KILL $cap 2>/dev/null; wait $cap; }
# Frames of the capture: ESP, cleartext UDP 4791, all.
frames() { tshark -r "$1" -Y "$2" 2>/dev/null | wc -l; }
summary() { printf '{"esp":%s,"roce":%s,"all":%s}' "$(frames "$1" esp)" "$(frames "$1" 'udp.port == 4791')" "$(frames "$1" frame)"; }

run_soft() {  # case name, key of the peer's SA to the gateway
  local c=$1 dir=$work/$1
  peer_sas "$ns" "$2"
  serve "$dir"
  capture $gwns esp-gw "$dir/cap.pcap"
  # A late join: the gateway has published for a while, so the subscriber recovers the history over RC.
  sleep 2
  peer subscribe --http-timeout 60000 --recovery --name esp-sub --json --count 300 --seconds 90 >"$dir/sub.out" 2>"$dir/sub.err"
  echo $? >"$dir/sub.status"
  printf 'buy 1001 100 5\ncancel 1 1001\n' >"$dir/orders.txt"
  peer order --http-timeout 60000 --name esp-order --account 1 --first-id 1 --file "$dir/orders.txt" --json >"$dir/order.out" 2>"$dir/order.err"
  echo $? >"$dir/order.status"
  get /v1/device >"$dir/device.json"
  get /metrics | grep '^qpgate_security' >"$dir/metrics.txt"
  ip netns exec $gwns node "$root/bin/qpgate.js" status --url "$url" --token "$token" >"$dir/status.txt" 2>&1
  ip netns exec $gwns ip xfrm policy >"$dir/policy.txt"
  ip netns exec $gwns cat /proc/net/xfrm_stat >"$dir/xfrm_stat.txt"
  ip netns exec $gwns ip -s xfrm state >"$dir/state-stats.txt"
  stop_capture
  kill -TERM $gw; timeout 60 tail --pid=$gw -f /dev/null; wait $gw; echo $? >"$dir/gw.status"
  ip netns exec $gwns ip xfrm state >"$dir/state-after.txt"
  summary "$dir/cap.pcap" >"$dir/capture.json"
}
cases=" ${ESP_CASES:-soft wrongkey refuse twolinks badkey rxe} "
has() { [[ $cases == *" $1 "* ]]; }
has soft && run_soft soft to-gw
has wrongkey && run_soft wrongkey wrong

# Refusal: the gateway's own policies gone (a peer no policy covers): the session is refused, the counter says why.
refuse() {
  local dir=$work/refuse
  peer_sas "$ns" to-gw
  serve "$dir" --set 'security.ipsec.peers=[]' --set security.ipsec.mode=verify --set feeds.enabled=false
  capture $gwns esp-gw "$dir/cap.pcap"
  printf 'buy 1001 100 5\n' >"$dir/orders.txt"
  peer order --http-timeout 60000 --name esp-refused --account 1 --first-id 1 --file "$dir/orders.txt" --json >"$dir/order.out" 2>"$dir/order.err"
  echo $? >"$dir/order.status"
  get /metrics | grep '^qpgate_security' >"$dir/metrics.txt"
  get /v1/device >"$dir/device.json"
  stop_capture
  kill -TERM $gw; timeout 60 tail --pid=$gw -f /dev/null; kill -KILL $gw 2>/dev/null; wait $gw
  summary "$dir/cap.pcap" >"$dir/capture.json"
}
has refuse && refuse

# twolinks: a gateway with a second link (backend.alternateAddress on a second
# veth pair) and SAs on both: the peer's second address and line B's group with
# link 'alternate'. An order session armed with an alternate path runs while
# the first link goes down: it migrates, every order is answered, and neither
# link carries RoCEv2 in the clear.
twolinks() {
  local dir=$work/twolinks gw2=10.77.5.1 peer2=10.77.5.2 n=40
  mkdir -p "$dir"
  ip link add esp-gw2 netns $gwns type veth peer name esp-peer2 netns "$ns"
  ip -n $gwns addr add $gw2/24 dev esp-gw2
  ip -n "$ns" addr add $peer2/24 dev esp-peer2
  ip -n $gwns link set esp-gw2 up
  ip -n "$ns" link set esp-peer2 up
  peer_sas "$ns" to-gw
  ip -n "$ns" xfrm state add src $peer2 dst $gw2 proto esp spi 0x1004 mode transport aead "$AEAD" 0x$(cat "$work/to-gw.key") 128
  ip -n "$ns" xfrm state add src $gw2 dst $peer2 proto esp spi 0x1003 mode transport aead "$AEAD" 0x$(cat "$work/to-peer.key") 128
  ip -n "$ns" xfrm policy add src $peer2/32 dst $gw2/32 proto udp dir out tmpl src $peer2 dst $gw2 proto esp mode transport
  ip -n "$ns" xfrm policy add src $gw2/32 dst $peer2/32 proto udp dir in tmpl src $gw2 dst $peer2 proto esp mode transport
  ip -n "$ns" xfrm state add src $gw2 dst 239.77.0.2 proto esp spi 0x2102 mode transport aead "$AEAD" 0x$(cat "$work/feed.key") 128
  ip -n "$ns" xfrm policy add src $gw2/32 dst 239.77.0.2/32 proto udp dir in tmpl src $gw2 dst 239.77.0.2 proto esp mode transport
  local peers="[{\"address\":\"$peer_ip\",\"out\":{\"spi\":4097,\"keyFile\":\"$work/to-peer.key\"},\"in\":{\"spi\":4098,\"keyFile\":\"$work/to-gw.key\"}},"
  peers+="{\"address\":\"$peer2\",\"link\":\"alternate\",\"out\":{\"spi\":4099,\"keyFile\":\"$work/to-peer.key\"},\"in\":{\"spi\":4100,\"keyFile\":\"$work/to-gw.key\"}},"
  peers+="{\"address\":\"239.77.0.1\",\"out\":{\"spi\":8193,\"keyFile\":\"$work/feed.key\"}},"
  peers+="{\"address\":\"239.77.0.2\",\"link\":\"alternate\",\"out\":{\"spi\":8450,\"keyFile\":\"$work/feed.key\"}}]"
  serve "$dir" --set backend.alternateAddress=$gw2 --set "security.ipsec.peers=$peers"
  capture $gwns esp-gw2 "$dir/cap2.pcap"
  local cap2=$cap
  capture $gwns esp-gw "$dir/cap.pcap"
  # One order every 0.2 s; the first link goes down after the first few are answered.
  { for i in $(seq 1 $n); do echo "buy 1001 100 $i"; sleep 0.2; done; } |
    peer order --http-timeout 60000 --name esp-2links --account 1 --first-id 1 --alternate-address $peer2 --ack-timeout 16 --json \
      >"$dir/order.out" 2>"$dir/order.err" &
  local client=$!
  local deadline=$((SECONDS + 120))
  until (($(grep -s -o '"kind":"ack"' "$dir/order.out" | wc -l) >= 5)) || ((SECONDS > deadline)) || ! kill -0 $client 2>/dev/null; do sleep 0.2; done
  ip -n $gwns link set esp-gw down
  # The session as the gateway lists it once it has moved (while the client still runs).
  deadline=$((SECONDS + 120))
  until gwget /v1/sessions >"$dir/sessions.json" && grep -q '"activePath":"alternate"' "$dir/sessions.json" || ((SECONDS > deadline)) || ! kill -0 $client 2>/dev/null; do sleep 0.5; done
  wait $client; echo $? >"$dir/order.status"
  gwget /v1/device >"$dir/device.json"
  gwget /metrics | grep '^qpgate_security' >"$dir/metrics.txt"
  ip netns exec $gwns node "$root/bin/qpgate.js" status --url "$url" --token "$token" >"$dir/status.txt" 2>&1
  ip netns exec $gwns ip xfrm policy >"$dir/policy.txt"
  stop_capture
  cap=$cap2
  stop_capture
  kill -TERM $gw; timeout 60 tail --pid=$gw -f /dev/null; wait $gw; echo $? >"$dir/gw.status"
  summary "$dir/cap.pcap" >"$dir/capture.json"
  summary "$dir/cap2.pcap" >"$dir/capture2.json"
}
has twolinks && twolinks

# Bad input at start: a key file others may read, exit 2 with one line.
badkey() {
chmod 644 "$work/feed.key"
mkdir -p "$work/badkey"
ip netns exec $gwns timeout 200 node "$root/bin/qpgate.js" serve --config "$work/security.yaml" --port 7481 --set state.dir="$work/badkey/state" \
  --set backend.kind=soft --set backend.device=esp-gw --set backend.address=$gw_ip >"$work/badkey/gw.out" 2>&1
echo $? >"$work/badkey/gw.status"
chmod 600 "$work/feed.key"
}
has badkey && badkey

# soft <-> rxe: rxe's packets go through the kernel's IP stack, so its SAs apply to them.
rxe() {
  local dir=$work/rxe a=$QPGATE_VM_NETNS_RXE_IP b=$QPGATE_VM_NETNS_IP dev=$QPGATE_VM_NETNS_RXE_DEV
  mkdir -p "$dir"
  for n in "" "-n $ns"; do
    ip $n xfrm state add src $a dst $b proto esp spi 0x3001 mode transport aead "$AEAD" 0x$(cat "$work/to-peer.key") 128
    ip $n xfrm state add src $b dst $a proto esp spi 0x3002 mode transport aead "$AEAD" 0x$(cat "$work/to-gw.key") 128
  done
  ip xfrm policy add src $a/32 dst $b/32 proto udp dir out tmpl src $a dst $b proto esp mode transport
  ip xfrm policy add src $b/32 dst $a/32 proto udp dir in tmpl src $b dst $a proto esp mode transport
  ip -n "$ns" xfrm policy add src $b/32 dst $a/32 proto udp dir out tmpl src $b dst $a proto esp mode transport
  ip -n "$ns" xfrm policy add src $a/32 dst $b/32 proto udp dir in tmpl src $a dst $b proto esp mode transport
  ip xfrm policy >"$dir/policy.txt"
  capture "$ns" veth-peer "$dir/cap.pcap"
  local gidx
  gidx=$("$root/test/rdma-vm/roce-gid-index" "$dev" "$a") || return
  timeout 120 ibv_rc_pingpong -d "$dev" -g "$gidx" -n 50 -p 18515 >"$dir/c.out" 2>&1 &
  local c=$!
  sleep 1
  # ESP hides the wire from a packet socket, and rxe's IPv4 ID is not 0: the ICRC cannot be checked here (ESP's ICV checks instead).
  timeout 120 ip netns exec "$ns" node "$root/bin/qpgate.js" pingpong -a "$b" --icrc count-unverifiable --json -n 50 -t rc -p 18515 -c "$a" >"$dir/q.out" 2>&1
  echo $? >"$dir/q.status"
  wait $c; echo $? >"$dir/c.status"
  stop_capture
  ip -s xfrm state >"$dir/state.txt"
  summary "$dir/cap.pcap" >"$dir/capture.json"
}
has rxe && rxe

node -e '
  const fs = require("fs"); const w = process.argv[1];
  const read = (f) => { try { return fs.readFileSync(w + "/" + f, "utf8"); } catch { return ""; } };
  const json = (f) => { try { return JSON.parse(read(f)); } catch { return null; } };
  const lines = (f) => read(f).split("\n").filter(Boolean);
  const soft = (c) => ({ capture: json(c + "/capture.json"), subStatus: +read(c + "/sub.status"), orderStatus: +read(c + "/order.status"), gwStatus: +read(c + "/gw.status"),
    sub: lines(c + "/sub.out"), subErr: read(c + "/sub.err").slice(-4000), order: lines(c + "/order.out"), orderErr: read(c + "/order.err").slice(-4000),
    device: json(c + "/device.json"), metrics: lines(c + "/metrics.txt"), status: read(c + "/status.txt"), policy: read(c + "/policy.txt"),
    xfrmStat: read(c + "/xfrm_stat.txt"), stateStats: read(c + "/state-stats.txt"), stateAfter: read(c + "/state-after.txt"), gwOut: read(c + "/gw.out").slice(-6000) });
  for (const c of ["soft", "wrongkey", "refuse"]) console.log(JSON.stringify({ case: c, ...soft(c) }));
  console.log(JSON.stringify({ case: "twolinks", ...soft("twolinks"), capture2: json("twolinks/capture2.json"), sessions: json("twolinks/sessions.json") }));
  console.log(JSON.stringify({ case: "badkey", status: +read("badkey/gw.status"), output: read("badkey/gw.out") }));
  console.log(JSON.stringify({ case: "rxe", capture: json("rxe/capture.json"), qStatus: +read("rxe/q.status"), cStatus: +read("rxe/c.status"),
    q: read("rxe/q.out"), c: read("rxe/c.out"), policy: read("rxe/policy.txt"), state: read("rxe/state.txt") }));
' "$work"
