# The two commands of README: `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
DEMO_DIR ?= $(CURDIR)/demo

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/lakemirror demo --dir $(DEMO_DIR)

test: install
	$(VENV)/bin/pytest

lint: install
	$(VENV)/bin/sqlfluff lint macros models

.PHONY: install demo test lint
