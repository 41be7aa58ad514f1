# Sourced by the guest scripts (bash): start_ibv_gateway DEV PORT DIR [serve
# options...] starts `qpgate serve` with backend.kind ibv on the RDMA device
# DEV in the background (gw: its pid, for the TERM that ends it; node itself,
# not a subshell), its state in DIR/state and its output in DIR/gw.out, waits
# for "qpgate ready" (up to 300 s) and sets token to its admin token. A low
# synthetic rate: under TCG a 10k/s feed leaves the control plane slower than
# the clients' 5 s. The peer namespace reaches the control plane over the
# veth: plain http off loopback, allowed because the guest network is the test's alone.
start_ibv_gateway() {
  local dev=$1 port=$2 dir=$3
  shift 3
  node "$root/bin/qpgate.js" serve --port "$port" --set state.dir="$dir/state" --set backend.kind=ibv --set backend.device="$dev" \
    --set control.host=0.0.0.0 --set control.allowPlaintextOnNetwork=true --set feeds.synthetic.ratePerSec=200 "$@" >"$dir/gw.out" 2>&1 &
  gw=$!
  local deadline=$((SECONDS + 300))
  until grep -q '"qpgate ready"' "$dir/gw.out" || ((SECONDS > deadline)) || ! kill -0 $gw 2>/dev/null; do sleep 1; done
  token=$(cat "$dir/state/admin.token" 2>/dev/null)
}

# replay_feed DIR: the published loop of feed-ticks.ts in DIR/replay/ticks,
# and in replay_args the serve options that make it the gateway's feed.
replay_feed() {
  mkdir -p "$1/replay"
  node "$root/dist/test/interop/feed-ticks.js" write "$1/replay/ticks"
  replay_args=(--set feeds.source=replay --set feeds.replay.dir="$1/replay" --set feeds.replay.file=ticks)
}

# lose_feed_frames NETDEV [NETNS]: frames of the default channel arriving at
# NETDEV (in NETNS) are lost on both lines now and then (all of line B, every
# 10th of line A: a loss on one line alone is filled by the other), so a
# subscriber there sees gaps that only recovery over RC can fill. On ingress,
# not on the gateway's egress: rxe's requester takes a packet its own tc drops
# for -EAGAIN and sends it again at once, forever (a soft lockup). tc's
# ingress hook is ahead of rxe's UDP socket and of the soft backend's
# AF_PACKET socket (bound to ETH_P_IP, not a tap of every packet).
# `tc -s filter show dev NETDEV ingress` counts what was dropped.
lose_feed_frames() {
  local tc=(tc ${2:+-n "$2"})
  "${tc[@]}" qdisc add dev "$1" clsact
  "${tc[@]}" filter add dev "$1" ingress protocol ip u32 match ip dst 239.77.0.2/32 action drop
  "${tc[@]}" filter add dev "$1" ingress protocol ip u32 match ip dst 239.77.0.1/32 action gact ok random determ drop 10
}
