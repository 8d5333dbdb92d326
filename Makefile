# trainyard — the two commands: `make demo` (the main job) and `make test` (everything CI runs).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0

.PHONY: install demo test lint types contracts pytest bench clean

install: $(STAMP)

# torch goes in first, pinned, so that the project's `torch>=...` range is already satisfied
# and pip never reaches for a newer build with gigabytes of CUDA packages.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[dev,train]'
	touch $(STAMP)

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
