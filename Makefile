# attn-course. Learners need two targets: `make lab` and `make test`.
# Both build the project-local virtual environment .venv on first use (Python 3.11, the
# pinned stack of pyproject.toml, attn_course installed editable) and reuse it afterwards.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

# Unit tests, grader tests and nbval over every lecture and solution notebook, one run.
PYTEST_ARGS ?= -n 2 --dist loadfile --nbval --nbval-current-env \
	--nbval-sanitize-with nbval-sanitize.cfg tests notebooks solutions

.PHONY: lab test chromium notebooks exercises bench clean

$(READY): pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(0 if v[:2] == (3, 11) else "attn-course needs Python 3.11; $(PYTHON) is %d.%d. Run: make PYTHON=/path/to/python3.11 ..." % v[:2])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

## lab: set up and open JupyterLab on the course (prints the URL)
lab: $(READY)
	$(BIN)/python -m attn_course lab

## test: set up and run every test
test: $(READY) chromium
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The browser test (tests/test_browser.py) drives Debian's Chromium; install it once.
CHROMIUM := /usr/bin/chromium
chromium:
	@if [ -x $(CHROMIUM) ]; then \
		echo "browser test: using $(CHROMIUM)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "browser test: installing Debian's chromium (apt-get update; apt-get install -y chromium)"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	else \
		echo "browser test: $(CHROMIUM) is missing and needs root + apt-get; it will be skipped"; \
	fi

## notebooks: re-execute lecture and solution notebooks in place (the only way outputs change)
notebooks: $(READY)
	$(BIN)/python -m attn_course execute notebooks solutions

## exercises: regenerate exercises/ from solutions/
exercises: $(READY)
	$(BIN)/python -m attn_course make-exercises

## bench: print the speed and memory tables
bench: $(READY)
	$(BIN)/python benchmarks/bench_attention.py
	$(BIN)/python benchmarks/bench_widgets.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
