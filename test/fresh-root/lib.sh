# Helpers for test/fresh-root/run.sh (sourced): steps that fail loudly, roots
# with /proc, /dev and /sys mounted, commands run inside them, and a cleanup
# that leaves no process, mount or directory behind.

FRESH_START=$(date +%s)
STEP="start"
ROOTS=()

step() {
  STEP=$1
  echo "fresh-root: [$(($(date +%s) - FRESH_START)) s] $STEP"
}

die() {
  echo "fresh-root: FAILED at step \"$STEP\": $*" >&2
  exit 1
}

# The pids of every process whose root directory is $1 (started by us inside it).
root_pids() {
  local root pid
  root=$(realpath "$1")
  for pid in /proc/[0-9]*; do
    [ "$(readlink "$pid/root" 2>/dev/null)" = "$root" ] && echo "${pid#/proc/}"
  done
  return 0
}

mounts_under() {
  findmnt -rn -o TARGET | grep -F "$(realpath "$1")/" || true
}

# A fresh copy of the pristine root, with the host's DNS and CA bundle (the
# machine's as they are: its npm cafile names that bundle) and /proc, /dev
# (recursively, as a slave so unmounting never reaches the host's) and /sys.
new_root() {
  local root=$1
  cp -a "$PRISTINE" "$root"
  ROOTS+=("$root")
  cp /etc/resolv.conf /etc/hosts "$root/etc/"
  mkdir -p "$root/etc/ssl/certs" "$root/usr/local/share/ca-certificates"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  # So that a ca-certificates package installed later regenerates the same bundle.
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --make-rslave "$root/dev"
  mount -t sysfs sysfs "$root/sys"
}

# Node 20 from this machine: the node binary and npm, at PREFIX in the root
# (/usr as NodeSource's deb has it, /usr/local as the node image has it).
# Not /usr/include/node: the build must get its headers from npm or Debian.
# npm's settings are the machine's (registry, cafile, ...) except nodedir:
# pointing nodedir at /usr was the workaround that hid cmake-js downloading
# Node's headers, which this step is here to catch.
install_node() {
  local root=$1 prefix=$2 npm_dir
  npm_dir=$(dirname "$(dirname "$(realpath "$(command -v npm)")")")
  mkdir -p "$root$prefix/bin" "$root$prefix/lib/node_modules" "$root$prefix/etc" "$root/root"
  cp "$(realpath "$(command -v node)")" "$root$prefix/bin/node"
  cp -a "$npm_dir" "$root$prefix/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root$prefix/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root$prefix/bin/npx"
  local globalconfig userconfig
  globalconfig=$(npm config get globalconfig)
  userconfig=$(npm config get userconfig)
  [ -f "$globalconfig" ] && cp "$globalconfig" "$root$prefix/etc/npmrc"
  if [ -f "$userconfig" ]; then grep -v '^[[:space:]]*nodedir[[:space:]]*=' "$userconfig" > "$root/root/.npmrc" || true; fi
}

# root_sh ROOT WORKDIR USER [VAR=value...] -- 'shell command'
root_sh() {
  local root=$1 wd=$2 user=$3
  shift 3
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  root_exec "$root" "$user" "${env[@]}" -- sh -c "cd \"\$0\" && $1" "$wd"
}

# root_exec ROOT USER [VAR=value...] -- argv: a clean environment, as a login would give.
root_exec() {
  local root=$1 user=$2
  shift 2
  local env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb)
  [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && env+=("NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS")
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  if [ "$user" = root ]; then
    chroot "$root" env -i HOME=/root "${env[@]}" "$@"
  else
    chroot "$root" setpriv --reuid="$user" --regid="$user" --init-groups \
      env -i HOME="/home/$user" "${env[@]}" "$@"
  fi
}

# Stops what still runs in every root, unmounts them and removes the work
# directory; refuses to remove anything while a mount is left under it.
cleanup() {
  local status=$? root pid left
  set +e
  for root in "${ROOTS[@]}"; do
    for sig in TERM KILL; do
      for pid in $(root_pids "$root"); do kill -s "$sig" "$pid" 2>/dev/null; done
      for _ in $(seq 50); do [ -z "$(root_pids "$root")" ] && break; sleep 0.1; done
    done
    for m in sys dev proc; do mountpoint -q "$root/$m" && umount -R "$root/$m"; done
  done
  left=$(mounts_under "$FRESH_WORK")
  if [ -n "$left" ]; then
    echo "fresh-root: mounts left under $FRESH_WORK, not removing it:" >&2
    echo "$left" >&2
    status=1
  elif [ -n "${FRESH_KEEP:-}" ]; then
    echo "fresh-root: kept $FRESH_WORK (FRESH_KEEP)"
  else
    rm -rf --one-file-system "$FRESH_WORK"
  fi
  echo "fresh-root: $([ "$status" -eq 0 ] && echo passed || echo failed) in $(($(date +%s) - FRESH_START)) s"
  exit "$status"
}

# Port 7470 is the README's: something listening there would answer for us.
require_free_port() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    die "port $1 on 127.0.0.1 is in use; the quick start's gateway needs it"
  fi
}

# wait_for SECONDS DESCRIPTION PID command...: until the command succeeds,
# failing if PID (the process it waits on) exits first.
wait_for() {
  local seconds=$1 what=$2 pid=$3
  shift 3
  local deadline=$(($(date +%s) + seconds))
  until "$@" > /dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || return 1
    [ "$(date +%s)" -lt "$deadline" ] || { echo "fresh-root: $what: no answer in $seconds s" >&2; return 1; }
    sleep 0.5
  done
}

# The pid of the gateway (node bin/qpgate.js serve) running inside ROOT.
gateway_pid() {
  local pid
  for pid in $(root_pids "$1"); do
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q '^node bin/qpgate.js serve' && { echo "$pid"; return 0; }
  done
  return 1
}

# stop_gateway ROOT LAUNCHER_PID LOG: SIGTERM to the gateway alone (what a
# service manager sends), then the launcher must exit 0.
stop_gateway() {
  local root=$1 launcher=$2 log=$3 pid status=0
  pid=$(gateway_pid "$root") || die "no gateway process found in the root; log:
$(tail -20 "$log")"
  kill -TERM "$pid"
  wait "$launcher" || status=$?
  [ "$status" -eq 0 ] || die "the gateway did not exit cleanly on SIGTERM (status $status); log:
$(tail -30 "$log")"
}
