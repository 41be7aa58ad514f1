#!/usr/bin/env bash
# The tokens compose.yaml needs, made once: an admin token for you and a read
# token for Prometheus's scrape of /metrics (control.metricsAuth: token), in
#   var/compose/qpgate.yaml        the gateway's control.tokens (mounted as its --config)
#   var/compose/prometheus.token   Prometheus's credentials_file (config/prometheus/prometheus.yaml)
#   var/compose/admin.token        yours: curl -H "Authorization: Bearer $(cat var/compose/admin.token)"
# Files already there are kept, so a rerun changes nothing. The directory is
# 0700 (yours only); the two mounted files are 0644 because the containers
# read them as their own users (node, nobody) through the bind mount.
# Usage: bash scripts/compose-setup.sh [dir]   (dir: var/compose under the checkout)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/var/compose}

# 32 characters from 24 random bytes (tokens need at least 16).
secret() { head -c 24 /dev/urandom | base64 | tr '+/' '-_'; }

install -d -m 0700 "$dir"
[ -s "$dir/admin.token" ] || (umask 077 && secret >"$dir/admin.token")
[ -s "$dir/prometheus.token" ] || secret >"$dir/prometheus.token"
chmod 0644 "$dir/prometheus.token"
if [ ! -s "$dir/qpgate.yaml" ]; then
  cat >"$dir/qpgate.yaml" <<YAML
# Written by scripts/compose-setup.sh for compose.yaml: the gateway's tokens.
control:
  tokens:
    - {name: admin, scope: admin, token: "$(cat "$dir/admin.token")"}
    - {name: prometheus, scope: read, token: "$(cat "$dir/prometheus.token")"}
YAML
fi
chmod 0644 "$dir/qpgate.yaml"
echo "compose-setup: tokens in $dir (docker compose up -d next)"
