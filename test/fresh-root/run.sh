#!/usr/bin/env bash
# The fresh-machine proof that .ci/run runs (issue 12): the README quick start
# and the Dockerfile's build, not on the CI machine (which has everything
# installed already) but in freshly made minimal Debian 12 roots:
#   1. mmdebstrap makes a minbase bookworm root from this machine's apt
#      sources as they are (the pristine root);
#   2. a copy + Node 20 from this machine + a clean checkout of HEAD runs
#      `bash scripts/setup.sh`, `npm start`, /healthz, `qpgate subscribe`
#      and a SIGTERM stop (quickstart.sh);
#   3. two more copies, dressed as node:20-bookworm-slim, run the Dockerfile's
#      build and runtime stages line by line, apt-get included (dockerfile.sh).
# Needs root (mmdebstrap, chroot, mounts), mmdebstrap and git, an npm
# registry and a Debian mirror; port 7470 free. Everything it makes lives in
# one directory under /var/tmp, removed at the end with its mounts and
# processes (FRESH_KEEP=1 keeps the directory for a look).
#   test/fresh-root/run.sh [quickstart|dockerfile]...   (default: both)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$HERE/lib.sh"
source "$HERE/quickstart.sh"
source "$HERE/dockerfile.sh"

checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(quickstart dockerfile)
for c in "${checks[@]}"; do
  [[ "$c" = quickstart || "$c" = dockerfile ]] || die "unknown check \"$c\" (quickstart, dockerfile)"
done
[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap, chroot and mounts)"
command -v mmdebstrap > /dev/null || die "mmdebstrap is not installed (bash scripts/setup.sh --with-tests)"

FRESH_WORK=$(mktemp -d /var/tmp/qpgate-fresh-root.XXXXXX)
trap cleanup EXIT
trap 'die "interrupted"' INT TERM

step "clean checkout of HEAD ($(git -C "$REPO" rev-parse --short HEAD))"
CHECKOUT_TAR="$FRESH_WORK/checkout.tar"
git -C "$REPO" archive --format=tar -o "$CHECKOUT_TAR" HEAD

step "mmdebstrap: minimal bookworm root from /etc/apt/sources.list.d/debian.sources"
PRISTINE="$FRESH_WORK/pristine"
mmdebstrap --variant=minbase --mode=root bookworm "$PRISTINE" /etc/apt/sources.list.d/debian.sources \
  > "$FRESH_WORK/mmdebstrap.log" 2>&1 || die "mmdebstrap failed; last lines:
$(tail -20 "$FRESH_WORK/mmdebstrap.log")"

for c in "${checks[@]}"; do "${c}_check"; done
step "done"
