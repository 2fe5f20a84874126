# The two commands of the README: `make run` and `make test` (`make test-fast` while working).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 5000
export BASE_URL ?= http://$(HOST):$(PORT)
PRISM := tests/providers/prism/node_modules/.bin/prism
AXE := tests/browser/axe/node_modules/axe-core/axe.min.js
# pytest-xdist workers: one per core by default; each has its own databases and ports.
PYTEST_WORKERS ?= auto
# Idle workers take tests from busy ones: the suite's minute-long tests (faults, browsers) would
# otherwise leave one worker alone at the end of a run.
PYTEST_DIST := --dist worksteal

.PHONY: run test test-fast install install-test chromium wrk worker bench bench-providers bench-smoke clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test chromium wrk $(PRISM) $(AXE)

# Prism (npm @stoplight/prism-cli, pinned with its lock file) checks every request of the
# Paystack connector against Paystack's OpenAPI document; installed under the tests, not globally.
$(PRISM): tests/providers/prism/package.json tests/providers/prism/package-lock.json
	npm ci --prefix tests/providers/prism --no-audit --no-fund --ignore-scripts
	touch $@

# axe-core (npm, pinned with its lock file) is injected into every dashboard page by the
# accessibility tests to check it against WCAG 2.2 AA.
$(AXE): tests/browser/axe/package.json tests/browser/axe/package-lock.json
	npm ci --prefix tests/browser/axe --no-audit --no-fund --ignore-scripts
	touch $@

# Browser tests drive Debian's Chromium; Playwright cannot download its own here.
chromium:
	@test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# The benchmark's load generator (its smoke run is part of the suite), from Debian's packages.
wrk:
	@test -x /usr/bin/wrk || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk)

# The demo's webhooks go to the built-in inbox on this machine: the server and the worker allow
# loopback (the application allows no address beyond the public Internet unless told).
run worker: export WEBHOOK_ALLOWED_NETWORKS ?= 127.0.0.0/8,::1/128
# It runs as a demo (DEMO_MODE=1): the simulator may decide live payments, approved on its
# checkout page.
run worker: export DEMO_MODE = 1

# Fresh machine to a running server and worker with the demo merchant.
run: install
	$(PY) -m flask --app app db upgrade
	$(PY) -m flask --app app demo
	@$(PY) -m flask --app app worker & worker=$$!; \
	trap "kill $$worker 2>/dev/null" EXIT INT TERM; \
	$(PY) -m flask --app app run --host $(HOST) --port $(PORT)

worker: install
	$(PY) -m flask --app app worker

# bandit's security checks of app/ (each accepted finding is marked `# nosec BXXX # why`),
# then the whole suite on PYTEST_WORKERS processes. PostgreSQL tests run when TEST_POSTGRES_URL
# (default: the local server) is reachable; REQUIRE_POSTGRES=1 makes an unreachable server a failure.
test: install-test
	$(PY) -m bandit -r app -q
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_DIST) $(PYTEST_ARGS)

# The suite without the tests that start real processes (marked slow): a few minutes.
test-fast: install-test
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_DIST) -m "not slow" $(PYTEST_ARGS)

# PostgreSQL and SQLite at 10,000 and 1,000,000 transactions; BENCH_ARGS passes options (--db postgres).
bench: install-test
	$(PY) -m bench.run $(BENCH_ARGS)

# The production path: a Paystack on loopback at 400 ms and hanging, a worker (docs/benchmarks.md).
bench-providers: install-test
	$(PY) -m bench.provider_path $(BENCH_ARGS)

bench-smoke: install-test
	$(PY) -m bench.run --smoke --out bench/results/raw/smoke

clean:
	rm -rf $(VENV) instance .pytest_cache
