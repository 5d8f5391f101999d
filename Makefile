# make run       : set up .venv with the core install (idempotent) and run the main job on the embedded default
# make test      : set up .venv (idempotent), lint (ruff check, ruff format --check, mypy), build the docs, then every test
#                  (Label Studio, tmux and slow ones included; the Label Studio ones in a second process beside the
#                  others); a lint failure stops it before pytest
# make test-fast : ruff (check and format --check, ~1 s), then the unit tests alone (no Label Studio, tmux or
#                  slow tests), under a minute: the inner loop (mypy is left to `make test` / `make lint`)
# make lint      : ruff (lint and format check) and mypy (config: pyproject.toml [tool.mypy], strict on core/)
# make ruff      : ruff alone;  make types : mypy alone
# make format    : apply ruff's formatting and safe fixes
# make docs      : build the documentation site (mkdocs, --strict: a broken link or API page fails) into site/
# make bench     : every benchmark in bench/, each printing its figures beside the targets
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast lint ruff types format venv bench clean docs namespace

CORE   := $(VENV)/.installed-core
# pip without its version notice; setuptools' notice that an install is editable (which newer pips pass on) is
# not a warning to the user
PIP    := PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip --disable-pip-version-check

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[test]'
	@touch $(STAMP) $(CORE)

# the core install alone (CLI, evaluation, simulation, terminal app): what `make run` needs; the Label Studio plugin
# is the extra `pip install -e '.[labelstudio]'`, the tools of `make test` the extra `test`
$(CORE): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@if [ ! $(STAMP) -nt pyproject.toml ]; then $(PIP) install --quiet -e . || exit 1; fi
	@touch $(CORE)

run: $(CORE)
	rm -f demo.easl demo.easl-wal demo.easl-shm
	$(VENV)/bin/easl demo --project demo.easl --output demo-export.csv
	@if [ -t 0 ] && [ -t 1 ]; then \
	  printf '\nPress Enter to open the campaign in the terminal app (Ctrl+Q quits it, and this table shows again). '; \
	  read -r _; $(VENV)/bin/easl tui demo.easl --monitor; \
	else echo "make run: not a terminal, so the app was not opened; open it with: $(VENV)/bin/easl tui demo.easl --monitor"; fi

# the Label Studio tests (a server the tests mostly wait on) run in a second pytest process beside the others, whose
# output follows theirs; make test fails when either does
test: lint docs
	@mkdir -p .cache
	@echo "$(PY) -m pytest -q -m labelstudio (beside the others; its output follows theirs)"
	@$(PY) -m pytest -q -p no:cacheprovider -m labelstudio > .cache/pytest-labelstudio.log 2>&1 & ls=$$!; \
	echo '$(PY) -m pytest -q -m "not labelstudio"'; $(PY) -m pytest -q -m "not labelstudio"; rest=$$?; \
	wait $$ls; lsrc=$$?; echo "--- the Label Studio tests:"; cat .cache/pytest-labelstudio.log; \
	test $$rest -eq 0 && test $$lsrc -eq 0

# markers: pyproject.toml [tool.pytest.ini_options]; which tests carry them: tests/conftest.py (MARKS)
test-fast: ruff
	$(PY) -m pytest -q -m "not labelstudio and not tmux and not slow"

lint: ruff types

ruff: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy and mkdocstrings cannot follow setuptools' editable finder, which maps the import package easl_toolkit onto the
# top-level folders: they read the folders through links under .cache/namespace/easl_toolkit
NAMESPACE := .cache/namespace/easl_toolkit
namespace:
	@mkdir -p $(NAMESPACE)
	@for p in core easl_plugin tui label_config; do ln -sfn ../../../$$p $(NAMESPACE)/$$p; done

types: $(STAMP) namespace
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

docs: $(STAMP) namespace
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

bench: $(STAMP)
	@for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info site

# make test-oracle : compare the evaluation metrics with RSMTool, irrCAC and krippendorff (opt-in; own venv)
ORACLE_VENV := .cache/oracle-venv
ORACLE_PY   := $(ORACLE_VENV)/bin/python
.PHONY: test-oracle
test-oracle: $(STAMP)
	@mkdir -p .cache; \
	if ! $(ORACLE_PY) -c "import rsmtool, irrCAC, krippendorff" >/dev/null 2>&1; then \
	  echo "test-oracle: installing rsmtool, irrCAC and krippendorff into $(ORACLE_VENV) (log: .cache/oracle-install.log)"; \
	  { $(PYTHON) -m venv $(ORACLE_VENV) && $(ORACLE_PY) -m pip install --quiet rsmtool irrCAC krippendorff \
	    && $(ORACLE_PY) -m pip install --quiet "coverage>=7.4"; } >.cache/oracle-install.log 2>&1; \
	fi; \
	if ! $(ORACLE_PY) -c "import rsmtool, irrCAC, krippendorff" >/dev/null 2>&1; then \
	  echo "test-oracle: skipped: rsmtool, irrCAC and krippendorff cannot be installed or imported here (see .cache/oracle-install.log)"; \
	  exit 0; \
	fi; \
	EASL_ORACLE_PYTHON=$(ORACLE_PY) $(PY) -m pytest -q -p no:cacheprovider tests/oracle/oracle_checks.py
