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
