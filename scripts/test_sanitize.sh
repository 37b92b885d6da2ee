#!/usr/bin/env bash
# scripts/test_sanitize.sh — the C++ suite under the sanitizers (`make test-sanitize`):
#   1. AddressSanitizer + UndefinedBehaviorSanitizer: every C++ test ($ASAN_BUILD, build/asan);
#   2. ThreadSanitizer: every test but the single-threaded analysis ones ($TSAN_BUILD, build/tsan):
#      the server, client, protocol, identity and kernel/backend tests.
# Any report fails the test that made it (halt_on_error / exitcode), so ctest lists it. GCC
# warns that TSan does not model atomic_thread_fence (-Wtsan): the dispatcher's and the client's
# fences order accesses to atomics only, so no report can come of it either way.
# Not part of `make test` (CI's time): the first run builds the suite twice (on a busy 2-core
# machine about 6 minutes with ASan+UBSan, 3 with TSan); the tests then take seconds each.
# Environment: JOBS (build jobs, default nproc), ASAN_BUILD, TSAN_BUILD, CTEST_ARGS (e.g. -R Wire),
# SANITIZE_CC / SANITIZE_CXX (default: the system's cc / c++), LOGS (build/logs).
set -uo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
ASAN_BUILD=${ASAN_BUILD:-build/asan}
TSAN_BUILD=${TSAN_BUILD:-build/tsan}
LOGS=${LOGS:-build/logs}
read -r -a extra <<<"${CTEST_ARGS:-}"
mkdir -p "$LOGS"
compilers=()
[ -n "${SANITIZE_CC:-}" ] && compilers+=("-DCMAKE_C_COMPILER=$SANITIZE_CC")
[ -n "${SANITIZE_CXX:-}" ] && compilers+=("-DCMAKE_CXX_COMPILER=$SANITIZE_CXX")

# $1 build folder, $2 sanitizer flags: configures and builds the C++ suite with them (no CUDA:
# its backend needs a GPU to be tested at all).
build() {
  local dir=$1 flags=$2 log="$LOGS/sanitize-build-$(basename "$1").log"
  echo "[test-sanitize] building the C++ suite in $dir with $flags ($JOBS jobs; log: $log)"
  # The model plugin stays out (PAAM_WITH_TORCH=OFF): libtorch is not built with the sanitizers
  # (its OpenMP threads alone would be reported); its table decoder is fuzzed (fuzz_tensors).
  if ! { cmake -S . -B "$dir" "${compilers[@]}" -DPAAM_BUILD_TESTS=ON -DPAAM_WITH_CUDA=OFF -DPAAM_WITH_TORCH=OFF \
           -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" \
           "-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags" &&
         cmake --build "$dir" -j "$JOBS"; } >"$log" 2>&1; then
    echo "[test-sanitize] build failed; the last lines of $log:"
    tail -n 40 "$log"
    return 1
  fi
}

# Every sanitizer turns mlock and mlockall into no-ops that succeed (sanitizer_common intercepts
# them), so the tests that check that memory really got locked cannot pass here; make test runs them.
unlockable='LockMemory|LockedMemory'
asan=passed
tsan=passed
t0=$(date +%s)
if build "$ASAN_BUILD" "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"; then
  t1=$(date +%s)
  echo "[test-sanitize] ASan+UBSan: running every C++ test"
  # The tests that run paamd out of descriptors (AtTheDescriptorLimit*) are left to TSan: UBSan's
  # check of a virtual call's object probes the memory through a pipe(2) of its own, which fails
  # with EMFILE there and is reported as "object has invalid vptr" (seen with strace).
  ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$ASAN_BUILD" --output-on-failure -j 2 -E "$unlockable|AtTheDescriptorLimit" "${extra[@]}" || asan=failed
  echo "[test-sanitize] ASan+UBSan: build $((t1 - t0)) s, tests $(($(date +%s) - t1)) s"
else
  asan=failed
fi

t0=$(date +%s)
if build "$TSAN_BUILD" "-fsanitize=thread -fno-omit-frame-pointer"; then
  t1=$(date +%s)
  echo "[test-sanitize] TSan: running the server, client, protocol and backend tests"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" \
    ctest --test-dir "$TSAN_BUILD" --output-on-failure -j 2 -LE '^analysis_test$' -E "^analysis_all\$|$unlockable" \
    "${extra[@]}" || tsan=failed
  echo "[test-sanitize] TSan: build $((t1 - t0)) s, tests $(($(date +%s) - t1)) s"
else
  tsan=failed
fi

echo "make test-sanitize: ASan+UBSan: $asan, TSan: $tsan"
[ $asan = passed ] && [ $tsan = passed ]
