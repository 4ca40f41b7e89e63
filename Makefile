# The two commands a fresh machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stamps: `make run` needs the service's runtime dependencies only; every development
# target (test, lint, typecheck, bench, fuzz, chaos, messages) installs the dev extras too.
RUN_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: install runtime browser run test lint typecheck check bench fuzz chaos clean messages

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $(RUN_STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(RUN_STAMP) $(DEV_STAMP)

## The service and its development tools (what every target but `run` needs).
install: $(DEV_STAMP)

## The service's runtime dependencies only (what `make run` needs).
runtime: $(RUN_STAMP)

## Debian's Chromium for the browser tests (tests/browser.py) when it is missing; needs root.
## Nothing downloads a browser build: playwright drives /usr/bin/chromium.
browser:
	test -x /usr/bin/chromium || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)

## Serve the API on $$PORT (default 8080) plus one worker; embedded PostgreSQL/Redis if unset.
run: runtime
	$(BIN)/legacy-planning dev

## Catalogs: extract every marked string and merge it into each shipped language's .po, whose
## new entries then need a translation (docs/translations.md); the suite fails until they have one.
LANGS := es fr de pt_BR ar
messages: install
	mkdir -p .data
	$(BIN)/pybabel extract -F babel.cfg -k N_ -c Translators: --no-location --sort-output \
		--project legacy-planning --version main --msgid-bugs-address docs/translations.md \
		-o .data/messages.pot .
	for lang in $(LANGS); do \
		test -f core/text/locale/$$lang/LC_MESSAGES/messages.po \
			|| $(BIN)/pybabel init -i .data/messages.pot -d core/text/locale -l $$lang --no-wrap; \
		$(BIN)/pybabel update -i .data/messages.pot -d core/text/locale -l $$lang \
			--no-fuzzy-matching --no-wrap --ignore-obsolete; \
	done

## The whole suite against DATABASE_URL/REDIS_URL, or embedded services when unset, spread over
## TEST_WORKERS pytest-xdist processes (0 runs it in this one), each with its own database and
## Redis index. Three on this 2-core machine, as tests also wait on PostgreSQL, Redis and their
## own subprocesses: bench/README.md, "The test suite", has the figures for 1 to 4.
TEST_WORKERS ?= 3
test: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check service api workers models core testing
	$(BIN)/lint-imports
	$(BIN)/python tests/complexity.py

typecheck: install
	$(BIN)/mypy

check: lint typecheck test

bench: install
	$(BIN)/python bench/run.py

## Fuzz every documented route (schemathesis) against a real server; fails on any 5xx.
fuzz: install
	$(BIN)/pip install --quiet 'schemathesis>=4,<5'
	$(BIN)/python bench/fuzz.py --max-examples $(or $(FUZZ_EXAMPLES),100) --max-time $(or $(FUZZ_SECONDS),0)

## The fault matrix (bench/chaos.py): the whole stack in processes of its own under a steady load,
## one fault at a time (PostgreSQL, Redis, S3, email provider, RPC node, a SIGKILLed worker);
## fails when an invariant breaks. CHAOS_ARGS=--short is CI's one round.
chaos: install
	$(BIN)/python bench/chaos.py $(CHAOS_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
