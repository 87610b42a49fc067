# modelgate: two commands for a fresh machine, `make demo` and `make test`.
# Both install what they need: system tools (apt, only those not already on PATH), Python packages (pip, into .venv, exactly the
# hashed requirements.lock), and the control plane's binaries (built with Go into ~/.cache/modelgate,
# reused while they match the sha256 recorded when they were built).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
PY := $(VENV)/bin/python
TEST_WORKERS ?= 5
# System tools, each a Debian package named as the command it gives (docs/setup.md: other systems).
# chromium: the tests render `modelgate report`'s page in it, headless.
APT_PACKAGES := prometheus shellcheck chromium
# Python's compiled modules are kept (__pycache__, ignored by git) even where the environment says not
# to: without them every process compiles the project again, and pytest rewrites every test module's
# asserts again in each worker (collection 9.3 s of CPU against 3.5 s, four times per run).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help setup apt-deps venv bins moto bins-demo bins-traefik cluster-up cluster-down cluster-status playground playground-down lint lock audit test demo bench generate docs clean

.DEFAULT_GOAL := help
help: ## list the targets
	@awk -F':.*## ' '/^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: apt-deps venv bins moto ## everything the tests need: apt, venv, binaries, moto
# A tool already on PATH serves; apt runs only for what is missing, and without apt, root or sudo
# hack/apt-deps.sh names what to install instead.
apt-deps: ## the system tools the target uses (apt, for those not on PATH)
	@bash hack/apt-deps.sh $(or $(firstword $(MAKECMDGOALS)),apt-deps) $(APT_PACKAGES)

# The venv is exactly requirements.lock, every file checked against the lock's hashes (pip, and
# hatchling to build the project, included), resolving nothing (hack/install-lock.sh: the lock's own
# pip first, then the lock with --no-deps), then the project itself, editable, adding nothing, and
# `pip check`. A new lock recreates it (--clear), so nothing outside the lock stays behind.
$(VENV)/.installed: requirements.lock pyproject.toml
	@command -v go >/dev/null || { echo "go is required (>= 1.26) to build the control plane" >&2; exit 1; }
	@# A .venv linked from another checkout (a git worktree) belongs to that checkout: --clear would
	@# empty it through the link.
	@if [ -L $(VENV) ]; then echo "$(VENV) is a link to another checkout's venv: not rebuilding it here; run make there, or remove the link" >&2; exit 1; fi
	python3 -m venv --clear $(VENV)
	bash hack/install-lock.sh $(VENV) requirements.lock
	$(VENV)/bin/pip install -q --no-deps --no-build-isolation -e .
	$(VENV)/bin/pip check
	touch $@

venv: $(VENV)/.installed ## the .venv, exactly requirements.lock, and modelgate editable
bins: ## build the bed's binaries with Go into ~/.cache/modelgate
	bash hack/build-bins.sh all

.PHONY: bins-bed
bins-bed: ## build only the local control plane's binaries
	bash hack/build-bins.sh bed

bins-demo: ## build only what the demo runs
	bash hack/build-bins.sh demo

# The bed's S3-compatible server (moto) in a venv of its own, cached (hack/moto-venv.sh).
moto: ## the bed's S3-compatible server in a venv of its own
	bash hack/moto-venv.sh >/dev/null

# Traefik alone (the bed's Gateway API data plane; `make bins` builds it with the rest).
bins-traefik: ## build Traefik alone
	bash hack/build-bins.sh traefik

# Only what the bed runs: no Traefik, simulator, helm, actionlint or chromium (the suite's).
cluster-up: apt-deps venv bins-bed ## start the local bed (API server, kwok, Prometheus)
	$(PY) -m testbed up --root .localcluster

cluster-down: ## stop the local bed
	$(PY) -m testbed down --root .localcluster

cluster-status: ## show the local bed's processes
	$(PY) -m testbed status --root .localcluster

# The bed, Traefik, model servers, the operator and traffic, left running for your own rollouts
# (docs/getting-started.md); playground-down stops what it started, the bed too if it started it.
# The demo's stack, left running for your own rollouts (docs/getting-started.md); it installs what
# the demo does.
playground: apt-deps venv bins-demo ## the demo's stack, left running for your own rollouts
	$(PY) -m testbed.playground up --root .localcluster

playground-down: ## stop what the playground started
	$(PY) -m testbed.playground down --root .localcluster

lint: venv ## ruff, mypy and the import contracts
	$(VENV)/bin/ruff check operator testbed tooling tests argocd bench
	$(VENV)/bin/ruff format --check operator testbed tooling tests argocd bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# requirements.lock: every dependency of pyproject.toml (dev included) and of its build, pinned with
# the hashes of their files; `make audit` checks it. requirements-image.lock: the Dockerfile's subset
# (the operator's dependencies and its build), at the same versions. Existing pins are kept; move one
# on purpose with `make lock LOCK_ARGS='--upgrade-package NAME'`.
LOCK_FLAGS := --strip-extras --no-emit-find-links --generate-hashes --allow-unsafe --quiet
lock: venv ## re-pin requirements.lock and requirements-image.lock
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) $(LOCK_ARGS) --extra dev --all-build-deps \
	  --output-file requirements.lock pyproject.toml
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) --build-deps-for wheel --constraint requirements.lock \
	  --output-file requirements-image.lock pyproject.toml

# Known vulnerabilities in the locked dependencies. Skipped, saying why, where no vulnerability
# service can be asked, unless MODELGATE_AUDIT=required.
audit: venv ## known vulnerabilities in the locked dependencies
	$(PY) -m tooling.dependency_audit requirements.lock

# The audit waits on the network (4-5 s where no vulnerability service answers), so it runs beside
# the suite; its verdict is printed after the suite's and fails the run as `make audit` would.
test: setup lint ## the full suite (installs what it needs)
	# Five workers (TEST_WORKERS), each with a bed of its own, a test file never split: most of a cluster
	# test is waiting on analysis intervals. Measured on the same code, quiet machine: 6m39s against
	# 7m17s with four (bench/REPORT.md, "A warm make test").
	# Files go out in the order named (not xdist's most-tests-first, which left the long cluster files
	# with few tests for last): the cluster files first, the quick unit files filling the tail.
	audit_log=$$(mktemp); $(PY) -m tooling.dependency_audit requirements.lock > "$$audit_log" 2>&1 & audit=$$!; \
	suite=0; bash hack/pytest.sh required -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests/cluster tests/unit --durations=15 || suite=$$?; \
	audited=0; wait $$audit || audited=$$?; cat "$$audit_log"; rm -f "$$audit_log"; \
	exit $$(( suite ? suite : audited ))

# The CRD (and the chart's copy) from the models in operator/modelgate/api, the chart's router RBAC
# from the routers' records, then the docs from the CRD.
generate: venv ## the CRD, the chart's RBAC and the docs from the code
	$(PY) -m tooling.crd_gen
	$(PY) -m tooling.router_rbac_gen
	$(PY) -m tooling.docs_gen

docs: generate ## same as generate
# The demo installs only what it runs: Prometheus from apt, the control plane, Traefik and the
# simulator (no chromium, shellcheck, helm or actionlint: those are for the tests).
demo playground cluster-up: APT_PACKAGES := prometheus
demo: apt-deps venv bins-demo ## three rollouts on llm-d's simulator behind Traefik
	$(PY) -m testbed.demo

bench: setup ## the long runs: speed, memory and scale (bench/REPORT.md)
	bash hack/pytest.sh optional bench -m bench -s

# Everything the release workflow (.github/workflows/release.yaml) does but the uploads, into dist/:
# wheel and sdist (installed into a fresh venv from the lock), the stamped chart (packaged, linted,
# rendered), the release notes, and the image where docker, podman or buildah exists.
.PHONY: release-check
release-check: venv ## build and verify every release artifact, no upload
	bash hack/build-bins.sh helm
	$(PY) -m tooling.release_check --out dist

clean: cluster-down ## stop the bed and remove its state and caches
	rm -rf .localcluster .pytest_cache .mypy_cache .ruff_cache
