# qpgate container image. Build: docker build -t qpgate .
# Run:   docker run --network host qpgate     (soft backend on the host's loopback;
#        control plane, status page and /healthz on http://127.0.0.1:7470)
# The build stage compiles the native addon against the packages Debian ships
# and npm's node-api-headers (nothing else is downloaded); .ci/run runs its
# apt-get and npm ci lines in a fresh bookworm root (test/fresh-root);
# the runtime stage carries only the shared libraries it links and runs as an
# unprivileged user.

FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake ninja-build g++ pkg-config \
      zlib1g-dev libisal-dev libnuma-dev libprotozero-dev libibverbs-dev libuv1-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin bin
COPY native/CMakeLists.txt native/package.json native/
COPY native/cmake native/cmake
COPY native/src native/src
COPY src src
COPY config config
COPY proto proto
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends zlib1g libisal2 libnuma1 libibverbs1 ibverbs-providers iproute2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules node_modules
COPY --from=build --chown=node:node /app/bin bin
COPY --from=build --chown=node:node /app/dist/src dist/src
COPY --from=build --chown=node:node /app/native/build/Release/qpgate.node native/build/Release/qpgate.node
COPY --from=build --chown=node:node /app/config config
COPY --from=build --chown=node:node /app/proto proto
COPY --from=build --chown=node:node /app/src/gateway/control/status-page src/gateway/control/status-page
RUN mkdir -p /app/var && chown node:node /app/var
USER node
ENV NODE_ENV=production
EXPOSE 7470
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:7470/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
ENTRYPOINT ["node", "bin/qpgate.js"]
CMD ["serve"]
