#!/usr/bin/env bash
# One-step install for a fresh Debian 12 machine with Node 20: the Debian
# packages the native build needs, then npm's packages (which builds the
# addon and the TypeScript). Needs an npm registry and a Debian mirror and
# nothing else: the addon's Node-API headers come from the node-api-headers
# npm package (native/package.json), never from a download of Node's sources.
# Run as root or with sudo available. .ci/run proves it on a fresh bookworm
# root (test/fresh-root/run.sh).
#   --with-tests   also install what the test suite needs (openssl for the TLS
#                  tests' certificates, clang, sanitizer runtimes, GoogleTest,
#                  tshark, scapy, chromium); .ci/run uses it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# Every find_package/find_path/find_library in native/ and what answers it:
# ZLIB -> zlib1g-dev, isa-l -> libisal-dev, numa -> libnuma-dev, protozero
# (src/orders, src/feed) -> libprotozero-dev, Threads -> libc; GTest (tests) ->
# libgtest-dev, ibverbs (optional) -> libibverbs-dev; uv.h (native/src/addon:
# Node's own include/node first) -> libuv1-dev.
build_pkgs=(cmake ninja-build g++ pkg-config zlib1g-dev libisal-dev libnuma-dev libprotozero-dev libuv1-dev)
# Optional: the `ibv` backend. The build succeeds without it (soft backend only) and says so.
optional_pkgs=(libibverbs-dev)
# At run time: security.ipsec installs and reads ESP states and policies with `ip xfrm` (src/gateway/security).
runtime_pkgs=(iproute2)
# The README's first commands after `npm start` (curl /healthz, /v1/device).
quickstart_pkgs=(curl ca-certificates)
test_pkgs=(openssl clang libclang-rt-14-dev libgtest-dev tshark python3 python3-scapy iproute2 procps
  # the rxe guest for the ibv backend's tests (test/rdma-vm): qemu, the guest's
  # userland and rdma-core's tools; kmod for modinfo/depmod on the unpacked kernel
  qemu-system-x86 busybox-static rdma-core ibverbs-utils ibverbs-providers perftest kmod xz-utils
  # promtool checks config/prometheus/alerts.yaml
  prometheus
  # the transport benchmark runs sockperf beside qpgate (bench/transport)
  sockperf
  # the status page test drives Debian's chromium headless with playwright-core (no browser download)
  chromium
  # the fresh-root step of .ci/run (test/fresh-root): a minimal bookworm root, the checkout from git
  mmdebstrap git)

pkgs=("${build_pkgs[@]}" "${optional_pkgs[@]}" "${runtime_pkgs[@]}" "${quickstart_pkgs[@]}")
[ "${1:-}" = "--with-tests" ] && pkgs+=("${test_pkgs[@]}")

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

missing=()
for p in "${pkgs[@]}"; do
  # Not piped into grep -q: under pipefail its early exit would fail the pipeline.
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer no without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | "${sudo_cmd[@]}" debconf-set-selections
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cd "$root"
echo "setup: installing npm packages and building the native addon"
npm ci --no-audit --no-fund
