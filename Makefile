# Everything a fresh machine with Python 3.11 needs: `make demo`, `make test`, `make bench`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: demo demo-headless test lint typecheck pytest bench screenshots clean

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

demo: $(STAMP_RUN)
	$(VENV)/bin/crewpoint demo --live --location .demo/.checkpoints

demo-headless: $(STAMP_RUN)
	$(VENV)/bin/crewpoint demo

lint: $(STAMP_DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP_DEV)
	$(VENV)/bin/mypy --strict -p crewpoint

pytest: $(STAMP_DEV)
	$(PY) -m pytest -q

test: lint typecheck pytest

bench: $(STAMP_DEV)
	$(PY) bench/run.py

screenshots: $(STAMP_DEV)
	$(PY) scripts/export_screenshots.py screenshots

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
