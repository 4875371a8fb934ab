# Quick start:  make demo   (set up .venv, run the main job on a built-in graph)
#               make test   (set up .venv with the test extra, run the whole suite)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

.PHONY: demo test test-gpu bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e ".[test,bench]"
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/mgmatch demo --output out

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

test-gpu: $(VENV)/.installed-test
	$(BIN)/python -m pytest -m "gpu or mgpu"

bench: $(VENV)/.installed-test
	$(BIN)/mgmatch bench --family all --output out/bench.json

clean:
	rm -rf $(VENV) out build dist .pytest_cache
