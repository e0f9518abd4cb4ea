# Everything a fresh machine with Python 3.11 needs: `make demo`, `make test`, `make bench`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev
STAMP_LAYOUT := $(VENV)/.installed-layout
# The folders of the four code packages: adding, moving or removing a module changes one of them.
PACKAGE_DIRS := $(shell find core providers tui screens -type d ! -name __pycache__ 2>/dev/null)

.PHONY: demo demo-headless test lint typecheck pytest system-packages bench screenshots clean test-crewai crewai-fixtures pg-local test-phoenix trace-svg

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m pip install --quiet -e . --config-settings editable_mode=strict
	touch $@ $(STAMP_RUN)

# mypy and the tests need the strict editable install, which maps each module file: made again when one is added
# (after a pull, say), so a new module is importable without a manual reinstall.
$(STAMP_LAYOUT): $(STAMP_DEV) $(PACKAGE_DIRS)
	$(PY) -m pip install --quiet --no-deps -e . --config-settings editable_mode=strict
	touch $@

demo: $(STAMP_RUN)
	$(VENV)/bin/crewpoint demo --live --location .demo/.checkpoints

demo-headless: $(STAMP_RUN)
	$(VENV)/bin/crewpoint demo

lint: $(STAMP_LAYOUT)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache  # the layers of DESIGN.md §2, contracts in pyproject.toml

typecheck: $(STAMP_LAYOUT)
	$(VENV)/bin/mypy --strict -p crewpoint

# Chromium and the PostgreSQL binaries, installed when missing and this user can (root or password-less sudo);
# otherwise their tests are skipped, each naming the command that enables it (under CI=true they fail instead).
system-packages:
	scripts/system-packages

# Parallel on every core and one more (pytest-xdist; an idle worker takes tests queued for a busy one, so one slow test
# does not hold the end): many tests wait on processes and servers they started, and the extra worker runs while they
# wait (on 2 cores, 3 workers took 9:28 where 2 took 12:00). One PostgreSQL server per worker. The ten slowest tests are listed. Bytecode is written even where
# PYTHONDONTWRITEBYTECODE is set: pytest keeps the test modules as it rewrote their asserts, so each worker reads them
# instead of rewriting all of them again before its first test (collecting took 100 s instead of 3 on a busy machine).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
pytest: $(STAMP_LAYOUT) system-packages
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=10

test: lint typecheck pytest

bench: $(STAMP_DEV)
	$(PY) bench/run.py

# Opt-in: CrewAI in a venv of its own (never a dependency of crewpoint) resumes a fork crewpoint made.
CREWAI_VENV := .venv-crewai
CREWAI_VERSION ?= 1.15.30

$(CREWAI_VENV)/.installed:
	$(PYTHON) -m venv $(CREWAI_VENV)
	$(CREWAI_VENV)/bin/pip install --quiet "crewai==$(CREWAI_VERSION)" pysqlite3-binary
	touch $@

test-crewai: $(STAMP_DEV) $(CREWAI_VENV)/.installed
	OTEL_SDK_DISABLED=true CREWAI_DISABLE_TELEMETRY=true CREWAI_TRACING_ENABLED=false \
		$(CREWAI_VENV)/bin/python scripts/make_crewai_fixtures.py --roundtrip .crewai-roundtrip $(abspath $(VENV)/bin/crewpoint)

crewai-fixtures: $(CREWAI_VENV)/.installed
	OTEL_SDK_DISABLED=true CREWAI_DISABLE_TELEMETRY=true CREWAI_TRACING_ENABLED=false \
		$(CREWAI_VENV)/bin/python scripts/make_crewai_fixtures.py tests/fixtures/crewai

# Opt-in: Arize Phoenix in a venv of its own (never a dependency of crewpoint) receives a run's trace over OTLP/HTTP,
# and the trace is read back through Phoenix's REST API.
PHOENIX_VENV := .venv-phoenix
PHOENIX_VERSION ?= 20.26.1

$(PHOENIX_VENV)/.installed:
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/pip install --quiet "arize-phoenix==$(PHOENIX_VERSION)"
	touch $@

test-phoenix: $(STAMP_DEV) $(PHOENIX_VENV)/.installed
	$(PY) scripts/phoenix_check.py $(abspath $(PHOENIX_VENV)/bin/phoenix)

trace-svg: $(STAMP_DEV)
	$(PY) scripts/trace_svg.py screenshots/trace.svg

pg-local: $(STAMP_DEV)
	$(PY) scripts/pg_local.py

screenshots: $(STAMP_DEV)
	$(PY) scripts/export_screenshots.py screenshots

clean:
	rm -rf $(VENV) $(CREWAI_VENV) $(PHOENIX_VENV) .crewai-roundtrip .mypy_cache .ruff_cache .pytest_cache
