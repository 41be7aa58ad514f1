# The README quick start on a fresh bookworm root (sourced by run.sh):
# `bash scripts/setup.sh && npm start`, /healthz answers 200, `qpgate
# subscribe` receives ticks, SIGTERM stops the gateway with exit 0.

QUICKSTART_TICKS=20

quickstart_check() {
  local root="$FRESH_WORK/quickstart" app=/root/qpgate log="$FRESH_WORK/quickstart-gateway.log"
  step "quick start: new root with Node 20 at /usr (as NodeSource's deb installs it)"
  new_root "$root"
  install_node "$root" /usr
  mkdir -p "$root$app"
  tar -x -C "$root$app" -f "$CHECKOUT_TAR"

  step "quick start: bash scripts/setup.sh"
  local t0=$(date +%s)
  root_sh "$root" "$app" root -- 'bash scripts/setup.sh' > "$FRESH_WORK/quickstart-setup.log" 2>&1 \
    || die "scripts/setup.sh failed; last lines:
$(tail -40 "$FRESH_WORK/quickstart-setup.log")"
  echo "fresh-root: setup.sh took $(($(date +%s) - t0)) s"
  [ -e "$root/usr/include/node" ] && die "the root has /usr/include/node: it must not, the build has to do without"
  grep -q 'Downloading distribution files' "$FRESH_WORK/quickstart-setup.log" && die "cmake-js downloaded Node's distribution files"

  step "quick start: npm start, waiting for /healthz on 127.0.0.1:7470"
  require_free_port 7470
  root_sh "$root" "$app" root -- 'exec npm start' > "$log" 2>&1 &
  local launcher=$!
  wait_for 60 "/healthz" "$launcher" root_sh "$root" / root -- \
    "node -e \"fetch('http://127.0.0.1:7470/healthz').then(r => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))\"" \
    || die "npm start did not answer /healthz with 200; gateway log:
$(tail -30 "$log")"

  step "quick start: the README's curl commands"
  root_sh "$root" "$app" root -- 'curl -sf http://127.0.0.1:7470/healthz && curl -sf -H "Authorization: Bearer $(cat var/admin.token)" http://127.0.0.1:7470/v1/device' \
    > "$FRESH_WORK/curl.out" 2>&1 || die "the README's curl commands failed: $(tail -5 "$FRESH_WORK/curl.out")"
  grep -q '"status":"ok"' "$FRESH_WORK/curl.out" || die "curl /healthz did not say ok: $(head -c 300 "$FRESH_WORK/curl.out")"

  step "quick start: qpgate subscribe --count $QUICKSTART_TICKS"
  local ticks
  ticks=$(root_sh "$root" "$app" root -- "timeout 60 node bin/qpgate.js subscribe --count $QUICKSTART_TICKS" 2> "$FRESH_WORK/subscribe.err" | grep -c '^ch [0-9]* seq ' || true)
  [ "$ticks" -ge "$QUICKSTART_TICKS" ] || die "qpgate subscribe printed $ticks ticks, expected $QUICKSTART_TICKS; stderr:
$(tail -20 "$FRESH_WORK/subscribe.err")
gateway log:
$(tail -20 "$log")"

  step "quick start: SIGTERM stops the gateway, exit 0"
  stop_gateway "$root" "$launcher" "$log"
}
