#!/usr/bin/env bash
# Runs inside the rdma-vm guest (test/rdma-vm/run --veth --netns): for send,
# write and atomic, perftest's ib_<test>_lat and the project's bench_ibv_lat on
# the same pair, server on rxe_a (10.77.1.1), client on rxe_b, one after the
# other; then the gateway itself on rxe and on the soft backend
# (gateway-guest.sh: feed latency, order -> Ack, a risk atomic).
# Prints one JSON line per measurement; bench/rdma/run.ts compares them.
#   guest.sh BENCH_BINARY ITERS GATEWAY_ITERS FEED_SECONDS FEED_RATE
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
ours=$1
iters=${2:-1000}
gw_iters=${3:-1000} feed_seconds=${4:-10} feed_rate=${5:-1000}
a=$QPGATE_VM_VETH_A_DEV b=$QPGATE_VM_VETH_B_DEV ip_a=$QPGATE_VM_VETH_A_IP ip_b=$QPGATE_VM_VETH_B_IP
gid_a=$("$root/test/rdma-vm/roce-gid-index" "$a" "$ip_a") || exit 3
gid_b=$("$root/test/rdma-vm/roce-gid-index" "$b" "$ip_b") || exit 3
out=$(mktemp)

# perftest prints a table; its data row follows the "#bytes" header:
# bytes iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
perftest() {  # test, extra flags...
  local t=$1; shift
  local port=$((18600 + RANDOM % 1000))
  timeout 300 "ib_${t}_lat" -d "$a" -x "$gid_a" -n "$iters" -p "$port" -F "$@" >/dev/null 2>&1 &
  local server=$!
  local status=1
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    sleep 1
    timeout 300 "ib_${t}_lat" -d "$b" -x "$gid_b" -n "$iters" -p "$port" -F "$@" "$ip_a" >"$out" 2>&1 && { status=0; break; }
    grep -q "Couldn't connect\|Unable to open file descriptor" "$out" || break  # a real failure, not "not listening yet"
  done
  wait $server
  if [[ $status != 0 ]]; then
    node -e 'console.log(JSON.stringify({ tool: "perftest", test: process.argv[1], error: process.argv[2] }))' "$t" "$(cat "$out")"
    return
  fi
  awk -v t="$t" '
    /#bytes/ { header = 1; next }
    header && NF >= 9 {
      printf "{\"tool\":\"perftest\",\"test\":\"%s\",\"size\":%s,\"iters\":%s,\"t_min\":%s,\"t_max\":%s,\"t_typical\":%s,\"t_avg\":%s,\"t_stdev\":%s,\"p99\":%s,\"p999\":%s}\n", t, $1, $2, $3, $4, $5, $6, $7, $8, $9
      exit
    }' "$out"
}

for t in send write atomic; do
  case $t in
    send | write) perftest "$t" -s 2 ;;
    atomic) perftest "$t" -A FETCH_AND_ADD ;;
  esac
  line=$(timeout 300 "$ours" --test "$t" --size 2 --iters "$iters" --server-dev "$a" --client-dev "$b" 2>&1 | grep '^RESULT ')
  echo "${line#RESULT }"
done

bash "$root/bench/rdma/gateway-guest.sh" "$gw_iters" "$feed_seconds" "$feed_rate"
