# The two commands of the README:
#   make demo   — set up everything, start paamd on the CPU backend and run the contention demo
#   make test   — set up everything and run every test (C++ via CTest, Python via pytest)
# Setup is idempotent: a virtual environment in .venv, the paam package installed into it.

VENV   ?= .venv
PY     := $(VENV)/bin/python
JOBS   ?= $(shell nproc)
CPPBUILD ?= build/cpp

.PHONY: setup install demo test test-cpp test-py bench clean

$(VENV)/.stamp: scripts/requirements-dev.txt
	@command -v cmake >/dev/null || { echo "cmake is missing: apt-get install cmake"; exit 1; }
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r scripts/requirements-dev.txt
	touch $@

setup: $(VENV)/.stamp

install: setup
	$(PY) -m pip install -q --no-build-isolation .
	$(PY) -m pip install -q --no-build-isolation --no-deps -e experiments

demo: install
	$(VENV)/bin/paam demo

test-cpp:
	cmake -S . -B $(CPPBUILD) -DPAAM_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(CPPBUILD) -j $(JOBS)
	ctest --test-dir $(CPPBUILD) --output-on-failure -j 2

test-py: install
	$(PY) -m pytest python/tests experiments/tests -v

test: test-cpp test-py

bench: install
	$(VENV)/bin/paam bench overhead

# --- ROS 2 (issue 5): Jazzy from PyPI into the same venv, then paam_msgs built with plain CMake
# against that prefix (ros2/build_msgs.sh). About a minute on 2 cores; the stamp makes it once.
.PHONY: ros test-ros bench-ros
ROS_STAMP := $(VENV)/.ros-stamp
$(ROS_STAMP): $(VENV)/.stamp scripts/requirements-ros.txt ros2/build_msgs.sh ros2/venv_cmake.sh $(wildcard ros2/paam_msgs/*.* ros2/paam_msgs/msg/* ros2/paam_msgs/srv/*)
	$(PY) -m pip install -q -r scripts/requirements-ros.txt
	ros2/build_msgs.sh $(VENV) build/paam_msgs
	touch $@
# Case study 2's C++ hot-path executor (ros2/picas_rcl: rcl and the core), into the venv's bin.
CS2_EXECUTOR := $(VENV)/bin/paam_cs2_executor
$(CS2_EXECUTOR): $(ROS_STAMP) ros2/build_executor.sh ros2/venv_cmake.sh $(wildcard ros2/picas_rcl/*) $(wildcard core/CMakeLists.txt core/include/paam/* core/src/*/* core/src/*/*/*)
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
