#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run --veth --netns), from
# bench/rdma/guest.sh: the product's gateway as its users meet it — `qpgate
# serve` with bench/orders/gateway.yaml and its synthetic feed at RATE/s —
# measured on each backend on the same emulated CPUs, one after the other:
#   ibv   the gateway on rxe_a (10.77.1.1), the clients on rxe_b
#   soft  the gateway and the clients on loopback addresses in namespace
#         qpgate-peer (rxe's UDP socket holds port 4791 in the initial one)
# and per backend:
#   feed   `qpgate subscribe --stats --json` for SECONDS: the subscriber's
#          end-to-end latency, frame sent by the gateway -> message received
#   order  OrderClient.newOrder() -> Ack, one in flight (bench/orders/ts-clients.js)
#   risk   RiskClient.fetchAdd() -> old value (on ibv rxe_a answers the atomic)
# One JSON line each ({"bench":"gateway","backend":..,"test":..}, µs), or
# {"bench":"gateway","backend":..,"error":..} with the gateway's log tail.
#   gateway-guest.sh ITERS SECONDS RATE
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
iters=$1 seconds=$2 rate=$3
work=$(mktemp -d)
token=bench-desk-token-0123456789abcdef
qpgate=("$root/bin/qpgate.js")
# Under TCG a control-plane call can take far longer than the clients' 5 s default (a
# loaded host: the subscriber's handshake timed out): 60 s, as the guest tests give it.
http_timeout_ms=60000
ts_clients=("$root/dist/bench/orders/ts-clients.js" --iters "$iters" --warmup $((iters / 10)) --max-seconds 60 --handshake-timeout-ms "$http_timeout_ms")

# rxe routes a group like any destination: out of veth-a, not the guest's default route.
ip route add 239.0.0.0/8 dev "$QPGATE_VM_VETH_A_NETDEV"

# error BACKEND WHAT: the failure as a JSON line, with the gateway's log tail.
error() {
  node -e 'console.log(JSON.stringify({ bench: "gateway", backend: process.argv[1], error: process.argv[2] }))' "$1" "$2
$(tail -c 4000 "$work/$1/gw.out" 2>/dev/null)"
}

# measure BACKEND PORT IN... -- CLIENT-DEVICE-FLAGS... -- TS-CLIENT-DEVICE-FLAGS...:
# the gateway (backend flags after PORT) started under the command prefix IN
# (`ip netns exec NS` or nothing), measured, stopped.
measure() {
  local backend=$1 port=$2
  shift 2
  local in=() serve_flags=() sub_flags=() client_flags=()
  while [[ $1 != -- ]]; do in+=("$1"); shift; done
  shift
  while [[ $1 != -- ]]; do serve_flags+=("$1"); shift; done
  shift
  while [[ $1 != -- ]]; do sub_flags+=("$1"); shift; done
  shift
  client_flags=("$@")
  local dir=$work/$backend url=http://127.0.0.1:$port
  mkdir -p "$dir"
  "${in[@]}" node "${qpgate[@]}" serve --config "$root/bench/orders/gateway.yaml" --port "$port" --set state.dir="$dir/state" \
    --set feeds.enabled=true --set feeds.synthetic.ratePerSec="$rate" "${serve_flags[@]}" >"$dir/gw.out" 2>&1 &
  local gw=$! deadline=$((SECONDS + 300))
  until grep -q '"qpgate ready"' "$dir/gw.out" || ((SECONDS > deadline)) || ! kill -0 $gw 2>/dev/null; do sleep 1; done
  if ! grep -q '"qpgate ready"' "$dir/gw.out"; then
    error "$backend" "the gateway did not start"
    kill -KILL $gw 2>/dev/null
    return
  fi
  timeout $((seconds + 120)) "${in[@]}" node "${qpgate[@]}" subscribe --url "$url" --token "$token" --http-timeout "$http_timeout_ms" "${sub_flags[@]}" \
    --stats --json --seconds "$seconds" >"$dir/sub.out" 2>"$dir/sub.err"
  local last
  last=$(tail -n 1 "$dir/sub.out")
  if [[ $last == '{'* ]]; then
    node -e '
      const s = JSON.parse(process.argv[2]); const us = (ns) => (ns === null ? null : ns / 1000);
      console.log(JSON.stringify({ bench: "gateway", backend: process.argv[1], test: "feed", received: s.received, gaps: s.gaps, lost: s.lost,
        p50: us(s.latencyNs.p50), p99: us(s.latencyNs.p99), p999: us(s.latencyNs.p999) }));' "$backend" "$last"
  else
    error "$backend" "subscribe: $(cat "$dir/sub.err")"
  fi
  local client line
  for client in order risk; do
    line=$(timeout 300 "${in[@]}" node "${ts_clients[@]}" --client "$client" --url "$url" "${client_flags[@]}" 2>"$dir/$client.err" | grep '^RESULT ')
    if [[ -n $line ]]; then
      node -e 'console.log(JSON.stringify({ ...JSON.parse(process.argv[3]), bench: "gateway", backend: process.argv[1], test: process.argv[2] }))' \
        "$backend" "$client" "${line#RESULT }"
    else
      error "$backend" "$client: $(tail -c 2000 "$dir/$client.err")"
    fi
  done
  kill -TERM $gw
  wait $gw
}

measure ibv 7480 -- --set backend.kind=ibv --set backend.device="$QPGATE_VM_VETH_A_DEV" \
  -- --backend ibv --device "$QPGATE_VM_VETH_B_DEV" -- --ibv-device "$QPGATE_VM_VETH_B_DEV"
measure soft 7490 ip netns exec "$QPGATE_VM_NETNS" -- --set backend.address=127.0.5.12 \
  -- --address 127.0.5.11 -- --client-address 127.0.5.11
