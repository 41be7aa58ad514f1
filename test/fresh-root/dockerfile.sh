# The Dockerfile's two stages, each in a fresh bookworm root dressed as
# node:20-bookworm-slim (sourced by run.sh). Their steps come from
# dockerfile-plan.mjs, so every RUN (the apt-get lines too) and COPY of the
# Dockerfile runs here as written; then the runtime root must have every
# library the addon links, and start and pass its HEALTHCHECK.

NODE_IMAGE='node:20-bookworm-slim'

# The node image: node and npm under /usr/local, a user node (1000:1000).
image_root() {
  new_root "$1"
  install_node "$1" /usr/local
  root_sh "$1" / root -- 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
}

# The helpers the plan calls, on the stage being built ($ROOT).
in_root() { root_sh "$ROOT" "$@"; }
in_root_start() {
  local wd=$1 user=$2 env=()
  shift 2
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  root_exec "$ROOT" "$user" "${env[@]}" -- sh -c 'cd "$0" && exec "$@"' "$wd" "$@"
}

# docker_copy FROM DEST into|as CHOWN SRC...: Docker's COPY. A source
# directory's contents are copied (never the directory itself); `into` puts
# sources in the directory DEST, `as` makes the one source DEST.
docker_copy() {
  local from=$1 dest=$2 mode=$3 chown=$4 src target
  shift 4
  for src in "$@"; do
    [ -e "$from/$src" ] || die "COPY: $src does not exist in the ${from##*/} context"
    if [ -d "$from/$src" ]; then
      target=$dest
      mkdir -p "$ROOT$target"
      cp -a "$from/$src/." "$ROOT$target/"
    elif [ "$mode" = into ]; then
      target="${dest%/}/$(basename "$src")"
      mkdir -p "$ROOT$dest"
      cp -a "$from/$src" "$ROOT$target"
    else
      target=$dest
      mkdir -p "$(dirname "$ROOT$target")"
      cp -a "$from/$src" "$ROOT$target"
    fi
    [ "$chown" = - ] || root_sh "$ROOT" / root -- "chown -R $chown '$target'"
  done
}

plan() {
  node "$HERE/dockerfile-plan.mjs" "$CONTEXT/Dockerfile" shell "$1" || die "dockerfile-plan.mjs could not read the Dockerfile"
}

run_stage() {
  local name=$1
  ROOT="$FRESH_WORK/docker-$name"
  eval "$(plan "$name")"
  local image="${name}_image"
  [ "${!image}" = "$NODE_IMAGE" ] || die "stage $name is FROM ${!image}; this check dresses its root as $NODE_IMAGE only"
  step "Dockerfile: $name stage in a fresh root"
  image_root "$ROOT"
  local t0=$(date +%s)
  "${name}_steps" > "$FRESH_WORK/docker-$name.log" 2>&1 || die "a $name stage step failed; last lines:
$(tail -40 "$FRESH_WORK/docker-$name.log")"
  echo "fresh-root: $name stage took $(($(date +%s) - t0)) s"
}

dockerfile_check() {
  CONTEXT="$FRESH_WORK/context"
  mkdir -p "$CONTEXT"
  tar -x -C "$CONTEXT" -f "$CHECKOUT_TAR"

  run_stage build
  FROM_build="$ROOT"
  local build="$ROOT/app"
  [ -f "$build/native/build/Release/qpgate.node" ] || die "the build stage built no native/build/Release/qpgate.node"
  [ -f "$build/dist/src/index.js" ] || die "the build stage compiled no dist/src/index.js"
  [ ! -e "$build/node_modules/typescript" ] || die "npm prune --omit=dev left the dev dependencies (typescript)"
  grep -q 'Downloading distribution files' "$FRESH_WORK/docker-build.log" && die "cmake-js downloaded Node's distribution files"

  run_stage runtime
  step "Dockerfile: the runtime stage has every library qpgate.node links"
  local ldd
  ldd=$(root_sh "$ROOT" / root -- 'ldd /app/native/build/Release/qpgate.node') || die "ldd failed in the runtime root"
  if grep -q 'not found' <<< "$ldd"; then die "libraries missing from the runtime stage's apt line:
$(grep 'not found' <<< "$ldd")"; fi

  step "Dockerfile: ENTRYPOINT + CMD as USER, HEALTHCHECK passes, SIGTERM exits 0"
  require_free_port 7470
  local log="$FRESH_WORK/docker-runtime-gateway.log"
  runtime_start > "$log" 2>&1 &
  local launcher=$!
  wait_for 60 "HEALTHCHECK" "$launcher" runtime_healthcheck || die "the image's HEALTHCHECK never passed; gateway log:
$(tail -30 "$log")"
  stop_gateway "$ROOT" "$launcher" "$log"
}
