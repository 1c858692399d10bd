# `make run` installs the arena into .venv and runs it; `make test` installs everything the
# tests need (Python packages, and Node.js when missing) and runs the checks and the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SOURCES := server bots visor tests bench

.PHONY: run test lint node

run: $(VENV)/.installed-run
	$(BIN)/tavern serve

test: $(VENV)/.installed-test node lint
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-test
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/mypy

$(VENV)/.installed-run: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-run

# The compatibility tests run bots written in JavaScript.
node:
	@command -v node >/dev/null || { apt-get update && apt-get install -y nodejs; }
