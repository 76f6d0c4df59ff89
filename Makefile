# syncdoctor: `make test` builds .venv if missing, installs the project with its test extras and runs
# everything; `make demo` runs the main scenario.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: test demo lint venv clean

$(VENV)/.installed: pyproject.toml setup.py src/syncdoctor-watch.pth
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip >/dev/null 2>&1 || true
	$(PIP) install -q -e '.[test]' 2>&1 | grep -v -e 'is ignored: it is neither a file nor a directory' || true
	$(PY) -c 'import syncdoctor, torch, pytest'
	touch $@

venv: $(VENV)/.installed

lint: venv
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

test: venv
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	sh scripts/ensure-chromium.sh
	sh scripts/ensure-launchers.sh
	PY=$(PY) sh scripts/run-tests.sh $(PYTEST_ARGS)

demo: venv
	$(VENV)/bin/syncdoctor demo

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
