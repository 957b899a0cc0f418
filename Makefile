# Both entry points bootstrap themselves: `make demo` and `make test` create .venv when missing.
# `make demo` installs only what the demo needs (the library and the `cli` extra);
# `make test` installs the `dev` extra (test tools, reference SDKs, cloud extras, Ray).
# Each has its own stamp, so a demo never waits for the test tools.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-cli

.PHONY: demo test quick lint types unit docs bench bench-fallback bench-deferred bench-embeddings bench-gateway clients clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[cli]'
	touch $(DEMO_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/modelwire demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts

types: $(STAMP)
	$(BIN)/mypy

# The tests' Python keeps its compiled bytecode (pytest's rewritten test modules too) in
# .venv/pycache, even where the environment sets PYTHONDONTWRITEBYTECODE: otherwise each
# xdist worker recompiles every test module (5 s) and each `python -m modelwire` the
# tests spawn recompiles modelwire (a third of its start-up).
TEST_ENV := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/$(VENV)/pycache

# Two workers per core (pytest-xdist); the suite is hermetic, so its tests share nothing.
# A test spends much of its time waiting (loopback sockets, the CLI and Ray in
# subprocesses, timeouts that must expire): on 2 cores, 2 workers keep the CPU busy
# 60 % of the time and take 300 s; 4 take 207 s.
WORKERS ?= $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) * 2 )))

unit: $(STAMP)
	$(TEST_ENV) $(BIN)/pytest -n $(WORKERS)

# The reference site (mkdocs.yml) in site/: README.md as its home, the guides in docs/,
# the API reference from the docstrings. --strict turns every warning into a failure: a
# broken link or anchor, a guide missing from the nav, a docstring documenting a
# parameter the function does not have or a cross-reference naming nothing.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

test: lint types docs unit

# The inner loop: lint, then the tests but the slow ones (real CLIs in a terminal, Ray,
# the SDK clients, the recorded-stream matrices, the mypy-on-a-snippet tests, most cases
# of the exhaustive every-split tests: see tests/conftest.py), property tests on a fifth
# of their examples (MODELWIRE_TESTS=quick), stopping at the first failure.
quick: $(STAMP)
	$(BIN)/ruff check src tests bench scripts
	$(TEST_ENV) MODELWIRE_TESTS=quick $(BIN)/pytest -n $(WORKERS) -x -m "not slow"

# The peers (openai, anthropic, httpx-sse, litellm) live only in bench/.venv.
bench:
	sh bench/setup_env.sh
	bench/.venv/bin/python bench/run.py

# The overhead of a mw.Fallback whose first model succeeds (modelwire only, no peers).
bench-fallback: $(STAMP)
	$(BIN)/python bench/bench_fallback.py

# The bytes of an agent's first request with 200 tools, sent vs deferred (modelwire only).
bench-deferred: $(STAMP)
	$(BIN)/python bench/bench_deferred.py

# mw.embed against the openai SDK's embeddings.create on the same MockServer.
bench-embeddings: $(STAMP)
	$(BIN)/python bench/bench_embeddings.py

# The latency the gateway (modelwire serve) adds to a streamed answer, against the
# backend itself and against the LiteLLM proxy when bench/.venv-litellm holds it.
bench-gateway: $(STAMP)
	$(BIN)/python bench/bench_gateway.py

# Claude Code and Codex CLI (installed with npm into build/clients, so it needs the
# network) each drive one tool-use turn through `modelwire serve` to a MockServer
# backend; not part of `make test`. Without npm it says so and does nothing.
clients: $(STAMP)
	$(BIN)/python scripts/drive_clients.py

clean:
	rm -rf $(VENV) bench/.venv build dist site
