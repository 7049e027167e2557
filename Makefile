# groundskeeper: `make demo` and `make test` work on a machine with nothing but Python.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
ZIGCC  := $(PY) -m ziglang cc -target wasm32-wasi -O2 -s
BOX_OUT ?= groundskeeper/sandbox/box.wasm
BOX_SRC := $(sort $(wildcard groundskeeper/sandbox/box/*.c))
BOX_HDR := $(wildcard groundskeeper/sandbox/box/*.h)

.PHONY: setup test lint demo eval wasm clean org-goldens claude-code browsers wheel-check

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,ray]'
	touch $(STAMP)

# CPython for the sandbox (groundskeeper/sandbox/cpython_setup.py): the pinned module checked
# against its SHA-256 and compiled once (8-40 s; never in a user's first check), and the
# read-only site directory with pytest built from hash-pinned wheels. A no-op when done.
setup: $(STAMP)
	$(PY) -m groundskeeper.sandbox.cpython_setup

lint: setup
	$(PY) -m ruff check groundskeeper tests benchmarks docs ledger
	$(PY) -m ruff format --check groundskeeper tests benchmarks docs ledger
	$(PY) -m mypy --strict groundskeeper

# On both cores: a pytest-xdist worker per core (CI and developers have 2; TEST_WORKERS=0 runs
# in one process), an idle worker taking tests from a busy one's queue, the longest tests
# started first (tests/conftest.py). The package is byte-compiled ahead: this machine sets
# PYTHONDONTWRITEBYTECODE, and each of the suite's hundreds of `python -m groundskeeper`
# subprocesses would otherwise compile it again.
TEST_WORKERS ?= 2

test: lint claude-code browsers wheel-check
	$(PY) -m compileall -q groundskeeper
	GROUNDSKEEPER_TEST_CLAUDE=$(CLAUDE_CODE_BIN) $(PY) -m pytest -n $(TEST_WORKERS) --dist worksteal

# The real Claude Code CLI for tests/agents (offline, against a local Messages API stub): the
# pinned npm package, a self-contained native binary (~400 MB), installed once into a cache
# outside the clone and reused by every later run. Its postinstall step only links the
# platform binary, which the tests call directly, so npm runs no package scripts. npm (with
# node) comes from Debian's packages when missing.
CLAUDE_CODE_VERSION := 2.1.332
CLAUDE_CODE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/groundskeeper/claude-code/$(CLAUDE_CODE_VERSION)
CLAUDE_CODE_BIN := $(CLAUDE_CODE_DIR)/node_modules/@anthropic-ai/claude-code-linux-x64/claude

claude-code: $(CLAUDE_CODE_BIN)

$(CLAUDE_CODE_BIN):
	@command -v npm >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y --no-install-recommends nodejs npm; }
	mkdir -p $(CLAUDE_CODE_DIR)
	npm install --prefix $(CLAUDE_CODE_DIR) --ignore-scripts --no-audit --no-fund \
	  --loglevel=error @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	test -x $@ && $@ --version

# The main job, offline: a goal → an outline the validator rejects → the one retry carrying its
# diagnostic → a valid plan → an honest worker and a lying one → the lie caught and fed back →
# the signed ledger verified. Then a Python project (examples/pylib, with the plan
# examples/demo/textkit/plan.org) whose own pytest suite is the check, with a bug put in
# (slugify drops digits): a DONE claimed over a failing test, pytest's report fed back, the bug
# fixed. Last, the first run's report: one page a reviewer opens in a browser. The scripted
# model plays author and workers; nothing leaves the machine. The runs happen in a scratch
# directory.
demo: setup
	@d=$$(mktemp -d) && export GROUNDSKEEPER_HOME=$$d/.home && \
	$(VENV)/bin/groundskeeper run "Write the release notes for 0.1.0 and count the changes" \
	  --model scripted:examples/demo/mission.yaml --dir $$d/work --require-checks && \
	echo && echo "plan after the run ($$d/work/plan.org):" && cat $$d/work/plan.org && \
	echo && $(VENV)/bin/groundskeeper ledger verify $$d/work && \
	echo && echo "a Python project's own test suite as acceptance (CPython in the sandbox):" && \
	cp -r examples/demo/textkit $$d/textkit && cp -r examples/pylib/tests $$d/textkit/tests && \
	sed 's/\[a-z0-9\]+/[a-z]+/' examples/pylib/textkit.py > $$d/textkit/textkit.py && \
	grep -q 'findall(r"\[a-z\]+"' $$d/textkit/textkit.py && \
	$(VENV)/bin/groundskeeper resume $$d/textkit/plan.org \
	  --model scripted:examples/demo/textkit.yaml --require-checks && \
	echo && cat $$d/textkit/plan.org && echo && $(VENV)/bin/groundskeeper ledger verify $$d/textkit && \
	echo && $(VENV)/bin/groundskeeper report $$d/work -o $$d/report.html && \
	echo "the run's report: $$d/report.html"

# The wheel as a pip user gets it (tests/wheel_check.py): built from this checkout, installed
# into a fresh virtual environment, and `groundskeeper eval --jobs 2` run from an empty
# directory, CPython for the sandbox set up on first need (no `make setup`); it must end
# `eval: N passed, 0 failed`. About three minutes, most of it the one-time CPython compile.
wheel-check: $(STAMP)
	$(PY) -m tests.wheel_check

# The shipped suite of fake-DONE agents and honest controls (make test runs it too).
eval: setup
	$(VENV)/bin/groundskeeper eval evals/fake-done --jobs 2

# Emacs's view of the org corpus (tests/org_corpus), kept as goldens that `make test` compares
# against; Debian's emacs-nox (GNU Emacs 28.2, org 9.5.5) is installed when emacs is missing.
org-goldens: setup
	@command -v emacs >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y --no-install-recommends emacs-nox; }
	$(PY) -m tests.org_corpus.make_goldens

# The report's browser tests (tests/review/test_browser.py) drive Debian's chromium through
# Playwright's Python package pointed at it (never `playwright install`, which downloads a
# browser of its own and fails offline): installed here when it is missing.
browsers:
	@command -v chromium >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y --no-install-recommends chromium; }

# The sandbox's commands: one multi-call WASI binary built from our own C sources.
wasm: setup
	$(ZIGCC) -o $(BOX_OUT) $(BOX_SRC)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
