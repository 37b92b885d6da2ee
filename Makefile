# The two commands of the README:
#   make demo   — set up everything, start paamd on the CPU backend and run the contention demo
#   make test   — set up everything and run every test: the C++ suite (CTest), the Python
#                 suites (pytest) and a short run of each fuzz target (skipped without clang),
#                 always all three; a summary at the end gives each one's result, and make fails
#                 if any failed
# Setup is idempotent (stamps in .venv). Each step prints a numbered line with what it does and
# about how long it takes the first time on a 2-core machine; pip and the C++ builds show their
# progress, and the whole output of the quiet ones goes to build/logs. `make help` lists targets.

SHELL    := /bin/bash
VENV     ?= .venv
PY       := $(VENV)/bin/python
PIP      := $(PY) -m pip --disable-pip-version-check
JOBS     ?= $(shell nproc)
CPPBUILD ?= build/cpp
LOGS     ?= build/logs
# What `make test` runs (narrow them to try the target itself, e.g.
# PYTEST_ARGS=python/tests/test_cli.py CTEST_ARGS="-R Wire").
CTEST_ARGS  ?=
PYTEST_ARGS ?= python/tests experiments/tests

.DEFAULT_GOAL := help
.PHONY: help setup install demo test test-cpp test-py bench clean fuzz-smoke fuzz test-sanitize

help:
	@echo "make demo       set up .venv and run the contention demo (paamd against direct invocation)"
	@echo "make test       set up everything (ROS 2 included) and run the C++ and the Python suites, then the fuzz smoke run"
	@echo "make test-cpp   only the C++ suite (CTest, build in $(CPPBUILD))"
	@echo "make test-py    only the Python suites (pytest; ROS 2 set up first)"
	@echo "make fuzz-smoke build the libFuzzer targets (clang, in $(FUZZ_BUILD)) and run each briefly from its seeds"
	@echo "make fuzz       run each fuzz target for FUZZ_SECONDS (default 300) or FUZZ_RUNS executions"
	@echo "make test-sanitize  the C++ suite under ASan+UBSan and the server/client tests under TSan (~10 min)"
	@echo "make install    set up .venv with paam and the experiments annex"
	@echo "make ros        add ROS 2 Jazzy, paam_msgs and the C++ executor to .venv"
	@echo "make bench      paam bench overhead"
	@echo "make clean      remove build/ and .venv"

# Setup steps: 1-3 for paam itself (make demo, make install), 4-6 for ROS 2 (make test, make ros).
SETUP_STEPS := $(if $(filter test test-py test-ros ros bench-ros,$(MAKECMDGOALS)),6,3)
# $(call step,N,TEXT): the progress line of setup step N.
step = @printf '\n[setup %s/%s] %s\n' '$(1)' '$(SETUP_STEPS)' '$(2)'
# $(call logged,LOG,COMMAND,PATTERN): COMMAND with all its output in LOG; the lines matching
# PATTERN (its progress) are shown as they come; on failure, the last 60 lines of LOG.
logged = mkdir -p $(dir $(1)) && set -o pipefail && { $(2); } 2>&1 | tee $(1) | \
  { grep --line-buffered -E '$(3)' || true; } || { echo "failed: the last lines of $(1):"; tail -n 60 $(1); exit 1; }

# Said before anything runs, where the first run's setup is still to come.
ifneq ($(filter demo,$(MAKECMDGOALS)),)
ifeq ($(wildcard $(VENV)/.stamp),)
$(info make demo: the first run sets up $(VENV) first (Python packages, then paam's C++ core \
  built from source): 3 numbered steps, about 2 minutes on 2 cores with a fast network, then the \
  demo itself (about 35 s). Later runs start the demo within seconds.)
endif
endif
ifneq ($(filter test test-py test-ros ros,$(MAKECMDGOALS)),)
ifeq ($(wildcard $(VENV)/.ros-stamp),)
$(info make $(filter test test-py test-ros ros,$(MAKECMDGOALS)): the first run sets up $(VENV) with \
  ROS 2 Jazzy and builds the C++ parts: 6 numbered steps, about 5 minutes on 2 cores with a fast \
  network. The tests then take about 8-10 minutes (the C++ build and suite, pytest, then the fuzz \
  targets' build and short runs).)
endif
endif

$(VENV)/.stamp: scripts/requirements-dev.txt
	@command -v cmake >/dev/null || { echo "cmake is missing: apt-get install cmake"; exit 1; }
	$(call step,1,creating the virtual environment $(VENV) (seconds))
	python3 -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(call step,2,installing the build and test requirements into $(VENV) (~25 packages with their dependencies; under a minute))
	$(PIP) install -r scripts/requirements-dev.txt
	touch $@

setup: $(VENV)/.stamp

# pip's verbose output with only CMake's steps shown ("[12/40] Building CXX object ..."); all of it
# in $(LOGS)/install.log.
install: setup
	$(call step,3,building paam from source (C++ core + paamd + Python bindings: about 45 compile steps; 1-2 minutes the first time; 2 more where libtorch is found: the model plugin) and installing it with the experiments annex)
	@$(call logged,$(LOGS)/install.log,$(PIP) install -v --no-build-isolation .,^ *\[[0-9]+/[0-9]+\]|^\*\*\* |^Successfully)
	@$(call logged,$(LOGS)/install-experiments.log,$(PIP) install --no-build-isolation --no-deps -e experiments,^Successfully installed)

demo: install
	$(VENV)/bin/paam demo

test-cpp:
	@echo "[test-cpp] configuring $(CPPBUILD) (log: $(LOGS)/cmake-cpp.log)"
	@$(call logged,$(LOGS)/cmake-cpp.log,cmake -S . -B $(CPPBUILD) -DPAAM_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo,^CMake (Warning|Error))
	@echo "[test-cpp] building the core and its tests with $(JOBS) jobs (about 2 minutes the first time on 2 cores)"
	cmake --build $(CPPBUILD) -j $(JOBS)
	ctest --test-dir $(CPPBUILD) --output-on-failure -j 2 $(CTEST_ARGS)

test-py: install
	$(PY) -m pytest $(PYTEST_ARGS) -v

# All three parts, whatever the others give; each one's output also goes to $(LOGS)/test-*.log.
# The fuzz part reports "skipped (no clang)" where clang or its libFuzzer runtime is missing.
test:
	@mkdir -p $(LOGS); set -o pipefail; cpp=passed; py=passed; fz=passed; \
	$(MAKE) --no-print-directory test-cpp 2>&1 | tee $(LOGS)/test-cpp.log || cpp=failed; \
	$(MAKE) --no-print-directory test-py 2>&1 | tee $(LOGS)/test-py.log || py=failed; \
	$(MAKE) --no-print-directory fuzz-smoke 2>&1 | tee $(LOGS)/test-fuzz.log || fz=failed; \
	c=$$(grep -E 'tests passed, [0-9]+ tests failed' $(LOGS)/test-cpp.log | tail -n 1); \
	p=$$(grep -E '^=+ .*[0-9]+ (passed|failed|error|errors|skipped)' $(LOGS)/test-py.log | tail -n 1 | sed -E 's/^=+ | =+$$//g'); \
	f=$$(sed -n 's/^fuzz-smoke: \([0-9]* targets.*\)/\1/p' $(LOGS)/test-fuzz.log | tail -n 1); \
	if [ $$fz = passed ] && grep -q '^fuzz-smoke: skipped' $(LOGS)/test-fuzz.log; then fz='skipped (no clang)'; f=; fi; \
	echo; echo "make test: C++: $$cpp ($${c:-no CTest summary: see $(LOGS)/test-cpp.log}), Python: $$py ($${p:-no pytest summary: see $(LOGS)/test-py.log}), fuzz: $$fz$${f:+ ($$f)}"; \
	[ $$cpp = passed ] && [ $$py = passed ] && [ "$$fz" != failed ]

# libFuzzer targets of core/fuzz (docs/fuzzing.md), built with clang in their own folder.
# fuzz-smoke: FUZZ_SMOKE_RUNS executions per target from the committed seeds (about 70 s on 2
# cores the first time, the build included; 40 s after). fuzz: FUZZ_SECONDS
# per target (or FUZZ_RUNS executions), growing a corpus kept in $(FUZZ_BUILD)/corpus-long.
FUZZ_BUILD      ?= build/fuzz
FUZZ_SMOKE_RUNS ?= 200000
FUZZ_SECONDS    ?= 300
fuzz-smoke:
	@FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) LOGS=$(LOGS) FUZZ_SMOKE_RUNS=$(FUZZ_SMOKE_RUNS) scripts/fuzz.sh smoke
fuzz:
	@FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) LOGS=$(LOGS) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) scripts/fuzz.sh long

# The C++ suite under ASan+UBSan (build/asan) and its server/client tests under TSan
# (build/tsan). Not part of `make test`: two more builds of the suite (scripts/test_sanitize.sh).
test-sanitize:
	@JOBS=$(JOBS) LOGS=$(LOGS) CTEST_ARGS="$(CTEST_ARGS)" scripts/test_sanitize.sh

bench: install
	$(VENV)/bin/paam bench overhead

# --- ROS 2: Jazzy from PyPI into the same venv, then paam_msgs built with plain CMake against that
# prefix (ros2/build_msgs.sh). The stamp makes it once.
.PHONY: ros test-ros bench-ros
ROS_STAMP := $(VENV)/.ros-stamp
$(ROS_STAMP): $(VENV)/.stamp scripts/requirements-ros.txt ros2/build_msgs.sh ros2/venv_cmake.sh $(wildcard ros2/paam_msgs/*.* ros2/paam_msgs/msg/* ros2/paam_msgs/srv/*)
	$(call step,4,installing ROS 2 Jazzy from PyPI into $(VENV) (~115 wheels; under a minute with a fast network))
	$(PIP) install --progress-bar off -r scripts/requirements-ros.txt
	$(call step,5,building the paam_msgs interfaces with the ROS 2 generators (1-2 minutes))
	ros2/build_msgs.sh $(VENV) build/paam_msgs
	touch $@
# Case study 2's C++ hot-path executor (ros2/picas_rcl: rcl and the core), into the venv's bin.
CS2_EXECUTOR := $(VENV)/bin/paam_cs2_executor
$(CS2_EXECUTOR): $(ROS_STAMP) ros2/build_executor.sh ros2/venv_cmake.sh $(wildcard ros2/picas_rcl/*) $(wildcard core/CMakeLists.txt core/include/paam/* core/src/*/* core/src/*/*/*)
	$(call step,6,building the C++ executor on rcl (ros2/picas_rcl) and its test (1-2 minutes))
	ros2/build_executor.sh $(VENV) build/picas_rcl
	touch $@
ros: $(ROS_STAMP) $(CS2_EXECUTOR)
# The Python tests include python/tests/ros: ROS is set up first, and a missing ROS fails them.
test-py: $(ROS_STAMP) $(CS2_EXECUTOR)
test-py: export PAAM_REQUIRE_ROS = 1
test-ros: install $(ROS_STAMP) $(CS2_EXECUTOR)
	PAAM_REQUIRE_ROS=1 $(PY) -m pytest python/tests/ros -v
bench-ros: install $(ROS_STAMP)
	$(VENV)/bin/paam ros-bench

clean:
	rm -rf build $(VENV)
