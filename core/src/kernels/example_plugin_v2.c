/* example_plugin_v2.c — a plugin of kernel ABI version 2 (core/include/paam/kernel_abi.h):
 * configured at start, a kernel with state, messages from plan and run, a tensor signature.
 *
 *   add_offset: (x: f32[n]) -> f32[n] = x + offset; params: n. Configuration: "offset=N"
 *   (an integer; "" means 0). Refuses to run on a NaN input, saying which element.
 *
 * Build: cc -shared -fPIC -I core/include example_plugin_v2.c -o libpaam_example_plugin_v2.so
 * Use:   ServerOptions::configured_plugins = {{"./libpaam_example_plugin_v2.so", "offset=3"}}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paam/kernel_abi.h"

typedef struct state {
  float offset;
} state;

static state g_state;
static int g_initialized;

static int plan_add(void* st, const paam_plan_args* a, uint64_t* out, char* err, size_t len) {
  (void)st;
  if (a->params[0] == 0 || a->input_bytes % sizeof(float) != 0 || a->input_bytes / sizeof(float) != a->params[0]) {
    snprintf(err, len, "add_offset: input must be n=%llu floats, got %llu bytes", (unsigned long long)a->params[0],
             (unsigned long long)a->input_bytes);
    return PAAM_KERNEL_EINVAL;
  }
  if (a->input_bytes > a->output_capacity) {
    snprintf(err, len, "add_offset: output of %llu bytes does not fit the %llu declared",
             (unsigned long long)a->input_bytes, (unsigned long long)a->output_capacity);
    return PAAM_KERNEL_EINVAL;
  }
  *out = a->input_bytes;
  return PAAM_KERNEL_OK;
}

static int run_add(void* st, const paam_kernel_args* a, char* err, size_t len) {
  const float* x = (const float*)a->input;
  float* y = (float*)a->output;
  const float offset = ((const state*)st)->offset;
  for (uint64_t i = 0; i < a->params[0]; ++i) {
    if (x[i] != x[i]) {
      snprintf(err, len, "add_offset: element %llu is NaN", (unsigned long long)i);
      return PAAM_KERNEL_EINVAL;
    }
    y[i] = x[i] + offset;
  }
  return PAAM_KERNEL_OK;
}

static const paam_kernel_v2 kKernels[] = {
    {"add_offset", "(x: f32[n]) -> f32[n]; params: n",
     "{\"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [-1]}], "
     "\"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [-1]}]}",
     &g_state, plan_add, run_add, NULL},
};

static void fini(void) { g_initialized = 0; }

static const paam_plugin_v2 kPlugin = {PAAM_KERNEL_ABI_V2, 1, kKernels, fini};

const paam_plugin_v2* paam_plugin_init(uint32_t abi_version, const char* config, char* err, size_t len) {
  if (abi_version != PAAM_KERNEL_ABI_V2) {
    snprintf(err, len, "add_offset speaks kernel ABI version %u, not %u", PAAM_KERNEL_ABI_V2, abi_version);
    return NULL;
  }
  char* end = NULL;
  long offset = 0;
  if (config != NULL && config[0] != '\0') {
    if (strncmp(config, "offset=", 7) != 0) {
      snprintf(err, len, "add_offset: configuration must be offset=N, got '%.64s'", config);
      return NULL;
    }
    offset = strtol(config + 7, &end, 10);
    if (end == config + 7 || *end != '\0') {
      snprintf(err, len, "add_offset: offset must be an integer, got '%.64s'", config + 7);
      return NULL;
    }
  }
  g_state.offset = (float)offset;
  g_initialized = 1;
  return &kPlugin;
}

/* For the tests: whether fini has run since the last init. */
int paam_example_v2_initialized(void) { return g_initialized; }
