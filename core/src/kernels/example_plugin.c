/* example_plugin.c — a user kernel through the C ABI (see core/include/paam/kernel_abi.h).
 *
 *   scale: (x: f32[n]) -> f32[n] = x * factor; params: n, factor_milli (factor * 1000)
 *
 * Build: cc -shared -fPIC -I core/include example_plugin.c -o libpaam_example_plugin.so
 * Use:   paamd --plugin ./libpaam_example_plugin.so
 */
#include <stdio.h>

#include "paam/kernel_abi.h"

static int plan_scale(const uint64_t p[PAAM_MAX_PARAMS], uint64_t in, uint64_t* out, char* err, size_t len) {
  /* Divide rather than multiply: p[0] * 4 wraps for p[0] >= 2^62 and would let run_scale read
   * and write p[0] floats of a small input. */
  if (p[0] == 0 || in % sizeof(float) != 0 || in / sizeof(float) != p[0]) {
    snprintf(err, len, "input must be n=%llu floats, got %llu bytes", (unsigned long long)p[0],
             (unsigned long long)in);
    return PAAM_KERNEL_EINVAL;
  }
  *out = in;
  return PAAM_KERNEL_OK;
}

static int run_scale(const paam_kernel_args* a) {
  const float* x = (const float*)a->input;
  float* y = (float*)a->output;
  const float factor = (float)a->params[1] / 1000.0f;
  for (uint64_t i = 0; i < a->params[0]; ++i) y[i] = x[i] * factor;
  return PAAM_KERNEL_OK;
}

static const paam_kernel kKernels[] = {
    {"scale", "(x: f32[n]) -> f32[n]; params: n, factor_milli", plan_scale, run_scale, NULL},
};

const paam_kernel* paam_plugin_kernels(uint32_t abi_version, uint32_t* count) {
  if (abi_version != PAAM_KERNEL_ABI_VERSION) return NULL;
  *count = 1;
  return kKernels;
}
