# syntax=docker/dockerfile:1
# Rampart's image, built with the README's own install: `npm ci`, whose postinstall is
# scripts/setup.sh (FerretDB, the address lists, the build). .ci/run installs the same way, and
# test/integration/deploy-files.test.ts checks that the two agree.
#
#   docker build -t rampart .
#   docker run -e RAMPART_MASTER_KEY=$(openssl rand -hex 32) -p 127.0.0.1:3000:3000 rampart
#
# The image runs in production mode behind a TLS-terminating proxy (RAMPART_TRUST_PROXY=true):
# set RAMPART_MASTER_KEY (64 hex characters), and MONGODB_URI unless the embedded database in the
# /app/.data volume is wanted. docs/deploy.md has the checklist.

# FerretDB, the embedded database, built from source by the same script `npm ci` runs. A stage of
# its own, so that it is rebuilt only when the script or its patches change.
FROM golang:1.24-bookworm AS ferretdb
WORKDIR /app
COPY scripts/install-ferretdb.sh scripts/
COPY scripts/ferretdb/ scripts/ferretdb/
RUN bash scripts/install-ferretdb.sh

FROM node:20-bookworm AS build
# pip fetches the address lists (scripts/install-ip-lists.sh).
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 python3-pip \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# Built by the stage above: setup.sh finds it current (its stamp) and does not need Go.
COPY --from=ferretdb /app/.tools/bin/ .tools/bin/
# The install as .ci/run runs it (the cache keeps npm's downloads between builds).
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
# The compiler, bundlers and test tools are not needed to run.
RUN npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    RAMPART_MODE=production \
    RAMPART_HOST=0.0.0.0 \
    RAMPART_TRUST_PROXY=true \
    RAMPART_DATA_DIR=/app/.data
WORKDIR /app
# A fixed numeric user, so that Kubernetes' runAsNonRoot can check it.
RUN groupadd --system --gid 10001 rampart \
  && useradd --system --uid 10001 --gid rampart --home-dir /app --no-create-home --shell /usr/sbin/nologin rampart \
  && mkdir -p /app/.data \
  && chown rampart:rampart /app/.data \
  && chmod 0700 /app/.data
COPY --from=build /app/package.json ./
COPY --from=build /app/bin/ bin/
COPY --from=build /app/proto/ proto/
# scripts/: the FerretDB build's stamp is checked against install-ferretdb.sh and its patches at
# start; healthcheck.js is the HEALTHCHECK.
COPY --from=build /app/scripts/ scripts/
COPY --from=build /app/node_modules/ node_modules/
COPY --from=build /app/dist/ dist/
COPY --from=build /app/.tools/ .tools/
USER 10001:10001
VOLUME ["/app/.data"]
EXPOSE 3000 50051
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["node", "scripts/healthcheck.js"]
# Not `npm start`: the image has no sources to check the build against. Rampart drains on SIGTERM.
CMD ["node", "dist/src/main.js"]
