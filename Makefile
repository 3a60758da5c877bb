# The two commands of README, `make demo` and `make test`; `make docs` builds the documentation
# site (docs/) into build/site; `make figures` renders performance.md's figures from docs/figures/.
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_DIR ?= $(CURDIR)/demo
# Delta's jars for the spark target's tests, where the machine has them (Maven is not reachable
# on ours); without them those tests skip and say why.
DELTA_JARS_FOLDER := $(abspath $(CURDIR)/../shared/delta-4.0.0)
ifeq ($(LAKEMIRROR_DELTA_JARS),)
ifneq ($(wildcard $(DELTA_JARS_FOLDER)/delta-spark_*.jar),)
export LAKEMIRROR_DELTA_JARS := $(DELTA_JARS_FOLDER)
endif
endif

# Azurite, Microsoft's Azure Storage emulator, for the object-store tests: from npm into the venv's
# node folder, where tests/python/object_servers.py finds it (moto's S3 server is a dev extra).
AZURITE_VERSION := 3.35.0

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	npm install --silent --no-audit --no-fund --prefix $(VENV)/node azurite@$(AZURITE_VERSION)
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/lakemirror demo --dir $(DEMO_DIR)

# The whole suite on two processes (tests/run_suite.py); LAKEMIRROR_TEST_PROCESSES=1 for one.
test: install
	$(PY) tests/run_suite.py

lint: install
	$(VENV)/bin/sqlfluff lint macros models

docs: install
	$(VENV)/bin/mkdocs build --strict -f docs/mkdocs.yml

# docs/pages/performance.md's figures and bench.png, from the bench's JSON in docs/figures/.
figures: install
	$(PY) -m lakemirror.bench.figures_page --docs docs

.PHONY: install demo test lint docs figures
