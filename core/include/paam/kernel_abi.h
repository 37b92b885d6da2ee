/* paam/kernel_abi.h — the C ABI for accelerator kernels (built-in and user plugins).
 *
 * A plugin is a shared library that exports one function:
 *
 *     const paam_kernel* paam_plugin_kernels(uint32_t abi_version, uint32_t* count);
 *
 * It returns an array of `*count` kernel descriptors that stay valid until the library is
 * unloaded, or NULL if it does not support `abi_version`. Load plugins with
 * `paamd --plugin path/to/libmykernels.so` (server) or `ClientOptions::plugins` (direct mode).
 *
 * Data model. A request carries one input byte area (the kernel's inputs packed back to back,
 * in the order its signature lists them) and up to PAAM_MAX_PARAMS unsigned 64-bit scalar
 * parameters (sizes, durations). `plan` validates the parameters against the input size and
 * says how many output bytes the kernel will write; the server calls it before running the
 * kernel and refuses the request with the returned message if it fails, so `run_*` may trust
 * its arguments. Kernels must be reentrant: several workers may run the same kernel at once on
 * different regions.
 *
 * Thread safety: `plan` and `run_*` may be called concurrently from several threads.
 * Do not change the layout of these structs without bumping PAAM_KERNEL_ABI_VERSION.
 */
#ifndef PAAM_KERNEL_ABI_H_
#define PAAM_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PAAM_KERNEL_ABI_VERSION 1u
#define PAAM_MAX_PARAMS 4

/* Return codes of plan/run. */
#define PAAM_KERNEL_OK 0
#define PAAM_KERNEL_EINVAL 1    /* parameters or sizes do not fit the signature */
#define PAAM_KERNEL_EFAILED 2   /* the kernel failed while running */

typedef enum paam_device_kind { PAAM_DEVICE_CPU = 0, PAAM_DEVICE_CUDA = 1 } paam_device_kind;

typedef struct paam_kernel_args {
  const void* input;        /* input bytes: host memory on CPU, device memory on CUDA */
  uint64_t input_bytes;
  void* output;             /* output area: host on CPU, device on CUDA */
  uint64_t output_bytes;    /* exactly what plan() returned */
  uint64_t params[PAAM_MAX_PARAMS];
  paam_device_kind device;
  void* stream;             /* cudaStream_t of the worker's bucket on CUDA; NULL on CPU */
  int32_t level;            /* hardware priority level, 0 = highest */
  int32_t device_index;     /* which GPU (CUDA) or 0 */
} paam_kernel_args;

typedef struct paam_kernel {
  const char* name;       /* unique, [a-z0-9_]+, at most 47 characters */
  const char* signature;  /* for humans: "(a: f32[n], b: f32[n]) -> f32[n]; params: n" */
  /* Validate; on success set *output_bytes and return PAAM_KERNEL_OK. On failure write a
   * NUL-terminated message of at most err_len bytes into err. */
  int (*plan)(const uint64_t params[PAAM_MAX_PARAMS], uint64_t input_bytes,
              uint64_t* output_bytes, char* err, size_t err_len);
  /* Run on the CPU, synchronously. NULL if the kernel has no CPU version. */
  int (*run_cpu)(const paam_kernel_args* args);
  /* Enqueue on args->stream (may return before the work finishes; the server synchronizes
   * the stream before signalling completion). NULL if the kernel has no CUDA version. */
  int (*run_cuda)(const paam_kernel_args* args);
} paam_kernel;

typedef const paam_kernel* (*paam_plugin_kernels_fn)(uint32_t abi_version, uint32_t* count);

#ifdef __cplusplus
}
#endif

#endif /* PAAM_KERNEL_ABI_H_ */
