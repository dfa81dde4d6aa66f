# The README's two commands: `make lab` and `make test`. Both install what is missing first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# perflab lab options, e.g. make lab LAB_ARGS="--quick"
LAB_ARGS ?=

.PHONY: lab test setup system venv clean

lab: setup
	$(BIN)/perflab lab $(LAB_ARGS)

test: setup
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

setup: system venv

system:
	@scripts/install-system-packages.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,postgres]'
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
