# vigil: two commands do everything on a fresh machine (Python 3.11 + Java 17):
#   make demo   creates .venv, installs, runs the main job (Spark pipeline, local)
#   make test   creates .venv, installs, runs the whole test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PYSPARK_PYTHON := $(CURDIR)/$(BIN)/python

.PHONY: demo test test-all explore lint install clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# the whole suite but the slow one (Spark jobs, cluster runs, soaks): under 10 minutes on 2 cores
test: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/python -m pytest -p no:cacheprovider -n auto --durations=15 -m 'not slow and not bench'

# the slow suites make test leaves out (Spark driver/sharded/recovery runs, randomized soaks); CI runs both
test-all: $(STAMP)
	$(BIN)/python -m pytest -p no:cacheprovider --durations=15 -m 'slow and not bench'

# randomized hypothesis seeds (make test is derandomized, see tests/conftest.py); no Spark tests
explore: $(STAMP)
	VIGIL_HYPOTHESIS=explore $(BIN)/python -m pytest -q -p no:cacheprovider -m 'not slow and not bench'

demo: $(STAMP)
	$(BIN)/vigil demo

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info
