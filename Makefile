# trainyard — the two commands: `make demo` (the main job) and `make test` (everything CI runs).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0
# `make install NATIVE=` skips the compiled engine (then everything runs pure Python)
NATIVE ?= build/native/engine.sha256
NATIVE_SOURCES := $(wildcard scheduler/engine/*.py scheduler/topology/*.py) scheduler/native.py scheduler/native_build.py

.PHONY: install demo test lint types contracts pytest bench clean

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

# The engine's and the placer's hot modules compiled with mypyc (issue 17): what the tests and the
# benchmarks run. Rebuilt whenever one of their sources changes; at import each package also checks
# the sources' sha256 and runs pure Python rather than a stale build. A failed build stops `make install` loudly
# instead of silently leaving a pure engine behind every later figure.
$(NATIVE): $(STAMP) $(NATIVE_SOURCES)
	@echo "compiling the engine's and the placer's hot modules with mypyc (about two minutes of CPU)"
	@$(BIN)/python -m scheduler.native_build || { \
	  echo "make install: the mypyc build of scheduler/engine and scheduler/topology failed (it needs gcc and the Python headers)."; \
	  echo "Fix that and run make install again; or run 'make install NATIVE=' to keep the pure-Python engine."; \
	  exit 1; }

demo: install
	$(BIN)/trainyard demo

test: install lint types contracts pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: install
	$(BIN)/mypy

contracts: install
	$(BIN)/lint-imports

pytest: install
	$(BIN)/pytest -q -p no:cacheprovider

bench: install
	../shared/tools/targets

clean:
	rm -rf $(VENV) build *.egg-info
