# modelgate: two commands for a fresh machine, `make demo` and `make test`.
# Both install what they need: Debian packages (apt), Python packages (pip, into .venv),
# and the control plane's binaries (built with Go into ~/.cache/modelgate, reused when present).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV := .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# chromium: the tests render `modelgate report`'s page in it, headless.
APT_PACKAGES := prometheus shellcheck chromium

.PHONY: setup apt-deps venv bins bins-traefik cluster-up cluster-down cluster-status lint lock audit test demo bench generate docs clean

setup: apt-deps venv bins

apt-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing$$missing"; \
	  $(SUDO) apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(VENV)/.installed: pyproject.toml
	@command -v go >/dev/null || { echo "go is required (>= 1.26) to build the control plane" >&2; exit 1; }
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

bins:
	bash hack/build-bins.sh all

# Traefik alone (the bed's Gateway API data plane; `make bins` builds it with the rest).
bins-traefik:
	bash hack/build-bins.sh traefik

cluster-up: setup
	$(PY) -m testbed up --root .localcluster

cluster-down:
	$(PY) -m testbed down --root .localcluster

cluster-status:
	$(PY) -m testbed status --root .localcluster

lint: venv
	$(VENV)/bin/ruff check operator testbed tooling tests argocd bench
	$(VENV)/bin/ruff format --check operator testbed tooling tests argocd bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# requirements.lock: every dependency of pyproject.toml (dev included) pinned; `make audit` checks it.
lock: venv
	$(VENV)/bin/pip-compile --extra dev --strip-extras --no-emit-find-links --quiet \
	  --output-file requirements.lock pyproject.toml

# Known vulnerabilities in the locked dependencies. Skipped, saying why, where no vulnerability
# service can be asked, unless MODELGATE_AUDIT=required.
audit: venv
	$(PY) -m tooling.dependency_audit requirements.lock

test: setup lint audit
	# Three workers, each with a bed of its own, a test file never split: most of a cluster test is
	# waiting on analysis intervals, so three share the 2 cores well (four were slower: 7m11s against 6m49s).
	# Files go out in the order named (not xdist's most-tests-first, which left the long cluster files
	# with few tests for last): the cluster files first, the quick unit files filling the tail.
	bash hack/pytest.sh required -n 3 --dist loadfile --no-loadscope-reorder tests/cluster tests/unit --durations=15

# The CRD (and the chart's copy) from the models in operator/modelgate/api, then the docs from the CRD.
generate: venv
	$(PY) -m tooling.crd_gen
	$(PY) -m tooling.docs_gen

docs: generate

demo: setup
	$(PY) -m testbed.demo

bench: setup
	bash hack/pytest.sh optional bench -m bench -s

clean: cluster-down
	rm -rf .localcluster .pytest_cache .mypy_cache .ruff_cache
