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

demo: install
	$(VENV)/bin/paam demo

test-cpp:
	cmake -S . -B $(CPPBUILD) -DPAAM_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(CPPBUILD) -j $(JOBS)
	ctest --test-dir $(CPPBUILD) --output-on-failure -j 2

test-py: install
	$(PY) -m pytest python/tests -v

test: test-cpp test-py

bench: install
	$(VENV)/bin/paam bench overhead

clean:
	rm -rf build $(VENV)
