# syntax=docker/dockerfile:1
#
# listings-sync: one image for every command (migrate, sync, serve). The command is
# the container's argument: `docker run IMAGE sync`, or `args: ["sync"]` in k8s.
#
# Build: docker build -t listings-sync:0.1.0 .
#
# There is no build step: Node 24 runs src/*.ts directly by type stripping, so the
# image holds the sources as they are in the repository.

# The base image. A tag moves (every Node 24 patch, every Debian security update), so
# two builds of one commit may differ. For a reproducible build pin it by digest, as
# docs/deploy.md ("Pinning the base image") shows:
#   docker buildx imagetools inspect node:24-slim        # prints `Digest: sha256:…`
#   docker build --build-arg NODE_IMAGE=node:24-slim@sha256:<digest> -t listings-sync:0.1.0 .
# and renew the digest on purpose (it carries the base image's security fixes).
ARG NODE_IMAGE=node:24-slim

# ---- deps: production node_modules only ------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# The manifest and lock file alone first, so that the install layer stays cached
# until a dependency changes, not whenever a source file does.
COPY package.json package-lock.json ./
# --omit=dev leaves out vitest, biome, typescript, and the `node@24` devDependency
# (which exists only to give npm scripts Node 24 on older machines; the image's own
# node is 24 already). No production dependency has an install script, so scripts
# are off: nothing from the registry runs code at build time. If a future runtime
# dependency needs one, allow it here by name rather than dropping the flag.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime ------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
ENV NODE_ENV=production
# The V8 flags (heap caps, --liftoff-only) are not repeated here: the process entry,
# bin/listings-sync.mjs, is the one place they are written, and it re-executes itself with
# any that are missing (docs/sizing.md, "The V8 flags"). A deployment can still set its own
# through NODE_OPTIONS (e.g. NODE_OPTIONS=--max-old-space-size=512): a flag given there wins.
# The embedded PGlite database (used only when DATABASE_URL is unset) lives in
# ./.data/pglite; the directory must exist and belong to the unprivileged user, or
# `migrate`/`sync` without a DATABASE_URL fail on a read-only /app. In k8s the
# warehouse is Postgres and the root filesystem is read-only; see k8s/.
RUN mkdir -p /app/.data && chown node:node /app/.data
# V8's compile cache (docs/deploy.md, "The image"): the modules compiled once, below, and
# read by every process, each of which then starts about 0.2 s of CPU sooner. Node keeps
# it per uid and per V8 flags, so the runtime user writes it, with the entry's flags (the
# warm script re-executes itself with them as the entry does); then it goes to root,
# read-only like the code: at run time it is only read.
ENV NODE_COMPILE_CACHE=/app/.cache/node-compile
RUN mkdir -p /app/.cache/node-compile && chown node:node /app/.cache/node-compile

# Code and dependencies stay owned by root, read-only to the process: a compromised
# process cannot rewrite its own code.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY migrations ./migrations

# The `node` user (uid 1000) ships with the base image. Numeric, so that
# Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 1000:1000
RUN node src/cli/warm-compile-cache.ts
USER root
RUN chown -R root:root /app/.cache && chmod -R a-w /app/.cache
USER 1000:1000

# `serve`: webhook intake (PORT, 8080) and /metrics with the probes (METRICS_PORT, 9464,
# for your Prometheus only: publish 8080 alone; docs/deploy.md, "docker run"). Both bind
# every interface of the container (LISTEN_ADDRESS, METRICS_LISTEN_ADDRESS: 0.0.0.0), so
# what is reachable is what you publish.
EXPOSE 8080 9464

# Docker (and Compose) only; Kubernetes ignores HEALTHCHECK and uses the probes in
# k8s/serve-deployment.yaml. Slim has no curl, so node asks. Meaningful for `serve`;
# one-shot commands (migrate, sync) exit long before the first check. It asks the
# metrics port, as the Kubernetes probes do: a flood of webhook connections cannot make
# a busy container look dead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.METRICS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"

# SIGTERM is what the CLI handles: a sync stops taking new businesses, lets in-flight
# business transactions commit, records the run as `interrupted`, and exits.
STOPSIGNAL SIGTERM

# node is PID 1 directly (exec form, no shell), so SIGTERM reaches it; the entry's re-exec
# with the flags replaces the process in place (the same PID 1). As PID 1 the
# kernel ignores a signal the process has no handler for: `sync` (and `serve`) handle
# SIGTERM; `migrate` does not and is killed at the end of the grace period, which is
# safe because Kysely applies Postgres migrations in a transaction.
# Airbyte runs a source as "$AIRBYTE_ENTRYPOINT spec|check|discover|read …"
# (docs/airbyte.md); `docker run IMAGE spec` works too: the CLI takes those as `airbyte …`.
ENV AIRBYTE_ENTRYPOINT="node bin/listings-sync.mjs airbyte"
ENTRYPOINT ["node", "bin/listings-sync.mjs"]
CMD ["serve"]

# ---- airbyte: the Airbyte source image ----------------------------------------------
# docker build --target airbyte -t listings-sync/source-listings-sync:0.1.0 .
# The runtime image with the source as its entrypoint, as Airbyte runs a connector:
# `IMAGE spec`, `IMAGE check --config F`, … (docs/airbyte.md, "The image"). Its ENTRYPOINT
# is AIRBYTE_ENTRYPOINT split at the spaces, as CAT's test_docker_env requires; the labels
# name the connector and its version (airbyte/source-listings-sync/metadata.yaml).
FROM runtime AS airbyte
LABEL io.airbyte.name="listings-sync/source-listings-sync" \
      io.airbyte.version="0.1.0"
ENV AIRBYTE_ENTRYPOINT="node bin/listings-sync.mjs airbyte"
ENTRYPOINT ["node", "bin/listings-sync.mjs", "airbyte"]
CMD ["--help"]
# A source is a one-shot process with no metrics port to ask.
HEALTHCHECK NONE

# ---- worker: the default image (the runtime stage as it is) -------------------------
# Last, so that `docker build .` builds it, as before the airbyte target existed.
FROM runtime AS worker
