# The README's two commands: `make lab` and `make test`. Both install what is missing first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# mypy's cache, shared by checkouts (see `test`)
MYPY_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/perflab/mypy
# perflab lab options, e.g. make lab LAB_ARGS="--quick"
LAB_ARGS ?=

.PHONY: lab test setup system venv clean docs-examples

# Bytecode writing on (PYTHONDONTWRITEBYTECODE is set on some machines): see the venv's rule.
lab: setup
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/perflab lab $(LAB_ARGS)

# Two parts: most tests on three workers (whole files each, so a file's servers start once),
# then the tests marked serial (real timings, load planted on chosen CPUs) alone. Three workers
# on two CPUs: a third of the workers' time is spent waiting (on Slurm's scheduling, PostgreSQL,
# Chromium, sleeps), which a third worker fills: the parallel part alone, on one checkout here,
# took 6 m 32 s on three workers and 7 m 17 s on two.
test: setup
	$(BIN)/ruff check src tests bench scripts/docs-examples
# mypy (about 15 s of one CPU from a cold cache, under 1 s from a warm one) runs beside the
# parallel part, its verdict read after it. Its cache lives beside perflab's build cache, so a
# second checkout starts warm: mypy checks each cached module against its source's hash, and
# writes its cache files atomically, so checkouts may share it. PYTHONDONTWRITEBYTECODE (set on this VM) would make every pytest process rewrite
# every test module's asserts again (about 5 s each); unset here, they cache them in
# tests/__pycache__.
# Exit status 5 is pytest's "no test selected": a PYTEST_ARGS that picks tests of one part only.
	@mkdir -p .mypy_cache; ( $(BIN)/mypy --cache-dir "$(MYPY_CACHE)" > .mypy_cache/make-test.log 2>&1; \
	  echo $$? > .mypy_cache/make-test.rc ) & \
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder \
	  -m "not serial" $(PYTEST_ARGS); rc=$$?; wait; cat .mypy_cache/make-test.log; \
	[ $$rc -eq 0 ] || [ $$rc -eq 5 ] || exit $$rc; exit $$(cat .mypy_cache/make-test.rc)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -m serial $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The README's tour and the pages' marked examples (docs/examples/NAME.sh), rerun for real and
# written back into the pages (about half an hour; tests/docs/test_docs_examples.py checks the pages
# against docs/examples/*.txt).
docs-examples: setup
	$(BIN)/python scripts/docs-examples $(EXAMPLES)

# Bytecode for perflab's own modules: an editable install has none, and where
# PYTHONDONTWRITEBYTECODE is set (as on this VM) every start would compile ~80 modules again,
# about 70 ms of each `perflab run` (bench/startup.sh). Up-to-date files are skipped.
setup: system venv
	@$(BIN)/python -m compileall -q src/perflab >/dev/null

system:
	@scripts/install-system-packages.sh

venv: $(VENV)/.installed

# uv installs the ~55 wheels (about 500 MB) as hard links from its cache in about 3 s, where pip
# unpacked them again in 17 s here; pip stays the fallback where uv cannot be installed or fails.
# uv reads no pip configuration: PIP_FIND_LINKS, where set, is passed on. Nothing is compiled
# here: `make test` and `make lab` run with bytecode writing on, so the modules a run imports
# (a fraction of SciPy's) are compiled once, at their first import, where compileall compiled
# all ~5,000 in 11 s.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if $(BIN)/python -m pip install -q uv && \
	   $(BIN)/uv pip install -q --python $(BIN)/python $${PIP_FIND_LINKS:+--find-links "$$PIP_FIND_LINKS"} \
	     -e '.[test,postgres]'; then :; else \
	   echo "perflab: uv failed; installing with pip"; \
	   $(BIN)/python -m pip install -q --no-compile -e '.[test,postgres]'; fi
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache
