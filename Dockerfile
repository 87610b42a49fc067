# syntax=docker/dockerfile:1
# modelgate's operator image: the operator's wheel and its locked dependencies, nothing else. The kind
# end-to-end (e2e/kind.sh) runs it as the load generator too, and adds the test bed on top of it
# for the model-server doubles (e2e/testbed.Dockerfile).
#
#   docker build -t modelgate:dev .
#   docker run --rm --read-only --tmpfs /tmp modelgate:dev --help
#
# Base: python:3.11-slim-trixie (Python 3.11.16) pinned by its multi-arch OCI index digest,
# resolved 2026-08-18. Bump it on purpose, in its own change: read the new digest with
# `docker buildx imagetools inspect python:3.11-slim-trixie` and replace it here.
ARG PYTHON_IMAGE=python:3.11-slim-trixie@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

# --- builder: the project's wheel and the locked wheels of all its dependencies -------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
# requirements-image.lock (`make lock`): the operator's dependencies and hatchling, its build
# backend, at requirements.lock's versions, with the sha256 of every file. Wheels only: nothing
# locked is built from source here.
COPY requirements-image.lock ./
RUN python -m pip download --require-hashes --no-deps --only-binary=:all: --dest /wheels \
      -r requirements-image.lock
# Only what the wheel is built from: hatchling reads pyproject.toml, the readme it names, and
# operator/modelgate (.dockerignore keeps caches and bytecode out).
COPY pyproject.toml README.md ./
COPY operator/ operator/
# modelgate's wheel, built with the checked hatchling (no index: nothing unchecked comes in), so
# the runtime stage installs offline and needs no build tools.
RUN python -m pip install --no-index --find-links=/wheels hatchling \
 && python -m pip wheel --no-deps --no-build-isolation --no-index --wheel-dir /wheels .

# --- runtime: the wheels installed, nothing else ---------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="modelgate" \
      org.opencontainers.image.description="Kubernetes operator that rolls out LLM inference Deployments as metric-gated canaries" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11-slim-trixie" \
      org.opencontainers.image.base.digest="sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7"

# A bind mount from the builder: the wheels never become a layer of this image. Each dependency has
# one wheel there, the locked one, so modelgate's requirements resolve to the lock and nothing else
# (hatchling stays in the builder). pip compiles the bytecode here, at build time, so nothing needs
# writing when the root filesystem is read-only.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir --disable-pip-version-check --root-user-action=ignore \
      --no-index --find-links=/wheels modelgate-operator \
 && groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot

# Set after the install on purpose: pip above should write .pyc files, Python at run time should not.
# HOME=/tmp: anything that keeps a cache under $HOME lands in /tmp, the one writable path when the
# root filesystem is read-only (the Helm chart mounts an emptyDir there).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
WORKDIR /tmp

# Numeric, so `runAsNonRoot: true` can be verified by the kubelet without reading /etc/passwd.
USER 65532:65532
# /metrics and the liveness endpoint /healthz.
EXPOSE 8080 8081
ENTRYPOINT ["modelgate", "run"]
CMD ["--all-namespaces", "--log-format=json", "--metrics-address=0.0.0.0:8080", "--health-address=0.0.0.0:8081"]
