# `make run` installs the arena into .venv (with ICU's headers and a C++ compiler from Debian
# when missing, which PyICU is built with) and runs it; `make test` installs everything the
# tests need (Python packages; Node.js, Go, a JDK, a C compiler with Jansson, Ruby, PHP,
# Chromium, Redis, PostgreSQL, HAProxy and bubblewrap from Debian when missing) and runs the checks and the
# suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SOURCES := tavern_cli server bots visor tests bench

.PHONY: run test lint icu node chromium go java c ruby php redis postgres haproxy bubblewrap

run: $(VENV)/.installed-run
	$(BIN)/tavern serve

# Three pytest workers for two cores: the suite's tests spend about half their time waiting (on
# bot processes starting, timers, Redis and PostgreSQL restarts), which a third worker fills; with
# four, the tests that measure time (a turn's timeout, an idle cut) ran late too often.
WORKERS ?= $(shell echo $$((3 * $$(nproc) / 2)))

test: $(VENV)/.installed-test node chromium go java c ruby php redis postgres haproxy bubblewrap lint
	$(BIN)/python -m pytest -n $(WORKERS) --dist worksteal

lint: $(VENV)/.installed-test
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/mypy
	$(BIN)/lint-imports

# setuptools tells every editable install, as a warning, to beware of folders named like the
# packages: the one warning not shown (pip still shows any other, and every error).
PIP_INSTALL := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet

$(VENV)/.installed-run: pyproject.toml | icu
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(PIP_INSTALL) -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | icu
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(PIP_INSTALL) -e '.[test]'
	touch $@ $(VENV)/.installed-run

# PyICU (server/names.py: look-alike names) has no wheels: pip builds it against Debian's ICU.
icu:
	@{ command -v pkg-config && command -v g++ && pkg-config --exists icu-i18n; } >/dev/null || \
	  { apt-get update && apt-get install -y pkg-config g++ libicu-dev; }

# The compatibility tests run bots written in JavaScript.
node:
	@command -v node >/dev/null || { apt-get update && apt-get install -y nodejs; }

# The visor's tests drive Debian's Chromium with Playwright (which cannot fetch its own here).
chromium:
	@test -x /usr/bin/chromium || { apt-get update && apt-get install -y chromium; }

# The starter kits' tests build and play the Go, Java, C (with Jansson for JSON), Ruby and PHP
# bots.
go:
	@command -v go >/dev/null || { apt-get update && apt-get install -y golang-go; }

java:
	@command -v javac >/dev/null || { apt-get update && apt-get install -y default-jdk-headless; }

c:
	@{ command -v cc && command -v pkg-config && test -f /usr/include/jansson.h; } >/dev/null || \
	  { apt-get update && apt-get install -y gcc make pkg-config libjansson-dev; }

ruby:
	@command -v ruby >/dev/null || { apt-get update && apt-get install -y ruby; }

php:
	@command -v php >/dev/null || { apt-get update && apt-get install -y php-cli; }

# The cluster and records tests start their own redis-server and PostgreSQL on loopback.
# redis-cli (redis-tools) makes the tests' Redis Cluster.
redis:
	@command -v redis-server >/dev/null && command -v redis-cli >/dev/null || { apt-get update && apt-get install -y redis-server redis-tools; }

# Isolated bots run under it (server/jail.py).
bubblewrap:
	@command -v bwrap >/dev/null || { apt-get update && apt-get install -y bubblewrap; }

postgres:
	@test -x /usr/lib/postgresql/15/bin/postgres || { apt-get update && apt-get install -y postgresql; }

# The deployment tests run deploy/haproxy.cfg in a real HAProxy in front of three nodes.
haproxy:
	@test -x /usr/sbin/haproxy || { apt-get update && apt-get install -y haproxy; }
