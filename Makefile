# The two commands of the quick start: `make run` serves the example policies, `make test`
# runs every check. Both create the virtual environment and install what they need.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint typecheck layers unit conformance e2e bench clean

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dev,bench]'
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/policyext validate rules/

test: lint typecheck layers unit

lint: $(STAMP)
	$(BIN)/ruff check policyext tests bench
	$(BIN)/ruff format --check policyext tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

layers: $(STAMP)
	$(BIN)/lint-imports

unit: $(STAMP)
	$(BIN)/pytest -q -m 'not e2e'

conformance: $(STAMP)
	$(BIN)/pytest -q tests/cel/test_conformance.py -s

e2e: $(STAMP)
	$(BIN)/pytest -q -m e2e

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build *.egg-info
