# trainyard — the two commands: `make demo` (the main job) and `make test` (everything CI runs).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0
# The compiled build (trainyard/native): its inputs come from its one list of compiled modules.
# `make install NATIVE=` skips it (then everything runs pure Python, and `make test` says so).
NATIVE ?= build/native/manifest.json
NATIVE_SOURCES := $(shell $(PYTHON) -m trainyard.native.modules)
NATIVE_TEST_ENV := $(if $(NATIVE),TRAINYARD_REQUIRE_COMPILED=1,TRAINYARD_PURE_ENGINE=1)

.PHONY: install demo test lint types contracts pytest bench clean cluster-tools

# The dashboard's browser tests drive Debian's chromium through Playwright (pinned in the dev
# extra); apt installs it where it is missing. Playwright's own browser download is never used.
CHROMIUM := /usr/bin/chromium

install: $(STAMP) $(NATIVE) $(CHROMIUM)

$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "make install: $(CHROMIUM) is missing and there is no apt-get: install Debian's chromium"; exit 1; }
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# torch goes in first, pinned, so that the project's `torch>=...` range is already satisfied
# and pip never reaches for a newer build with gigabytes of CUDA packages.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[dev,train]'
	touch $(STAMP)

# The hot modules of the engine, the placer and the simulator compiled with mypyc: what the tests
# and the benchmarks run. Rebuilt whenever one of their sources changes; a stale or missing build
# is an ImportError under `make test` and a refusal in `trainyard bench`. A failed build stops
# `make install` loudly instead of silently leaving a pure engine behind every later figure.
$(NATIVE): $(STAMP) $(NATIVE_SOURCES)
	@echo "compiling the hot modules of trainyard.native.modules with mypyc (about two and a half minutes of CPU)"
	@$(BIN)/python -m trainyard.native.build || { \
	  echo "make install: the mypyc build failed (it needs gcc and the Python headers)."; \
	  echo "Fix that and run make install again; or run 'make install NATIVE=' to keep the pure-Python engine."; \
	  exit 1; }

demo: install
	$(BIN)/trainyard demo

# The real Kubernetes components (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# KWOK, JobSet, Kueue) built from their Go modules at the versions sandbox/real/versions.toml pins,
# into a cache outside the work tree ($$TRAINYARD_CLUSTER_TOOLS, default ~/.cache/trainyard/
# cluster-tools). A no-op once built; without Go it says so and the real test tier skips.
cluster-tools: install
	$(BIN)/python -m sandbox.real.build

test: install cluster-tools lint types contracts pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: install
	$(BIN)/mypy

contracts: install
	$(BIN)/lint-imports

pytest: install
	$(NATIVE_TEST_ENV) $(BIN)/pytest -q -p no:cacheprovider

bench: install
	../shared/tools/targets

clean:
	rm -rf $(VENV) build *.egg-info
