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
 *
 * Version 2 (below, PAAM_KERNEL_ABI_V2) is for plugins configured at start, such as the model
 * plugin (core/src/models, docs/models.md). Such a plugin exports
 *
 *     const paam_plugin_v2* paam_plugin_init(uint32_t abi_version, const char* config,
 *                                            char* err, size_t err_len);
 *
 * which gets the plugin's configuration (text the plugin defines: JSON for the model plugin)
 * and returns its kernels, each with state of its own, functions that report errors as text,
 * and optionally a machine-readable signature of named tensors. paamd loads the model plugin
 * this way (`--model`); ServerOptions::configured_plugins loads any other. A plugin
 * that exports only paam_plugin_kernels is a version 1 plugin and works as before; a plugin
 * that exports both is loaded as version 2.
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
  /* Appended by version 2 (a version 1 kernel never reads past device_index): the request's
   * input in host memory, that is the region's input area, which the CUDA backend has copied
   * to `input` on `stream`; NULL when the input lives on the device only (CUDA IPC device
   * data). Shared with the client: copy what you check before trusting it. */
  const void* host_input;
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

/* ---- Version 2: plugins configured at start, kernels with state and tensor signatures ---- */

#define PAAM_KERNEL_ABI_V2 2u

/* What plan() of a version 2 kernel sees of a request. */
typedef struct paam_plan_args {
  const uint64_t* params;    /* PAAM_MAX_PARAMS values */
  uint64_t input_bytes;
  /* The input area in host memory, or NULL when the input lives on the device (CUDA IPC).
   * Shared with the client, which may change it at any time: copy, then check the copy. */
  const void* host_input;
  uint64_t output_capacity;  /* bytes of the output area declared at registration */
} paam_plan_args;

typedef struct paam_kernel_v2 {
  const char* name;       /* as version 1 */
  const char* signature;  /* for humans, as version 1 */
  /* Machine-readable signature (JSON: {"inputs": [{"name", "dtype", "shape", "max_shape"}],
   * "outputs": [...], ...}; docs/models.md), published to clients by paamd; NULL: none. */
  const char* tensor_signature;
  void* state;            /* passed back to every call below */
  /* As version 1, with the state and the request's data; on failure a NUL-terminated
   * message of at most err_len bytes in err (paamd answers the request with it). */
  int (*plan)(void* state, const paam_plan_args* args, uint64_t* output_bytes, char* err, size_t err_len);
  int (*run_cpu)(void* state, const paam_kernel_args* args, char* err, size_t err_len);
  int (*run_cuda)(void* state, const paam_kernel_args* args, char* err, size_t err_len);
  /* Appended; NULL in a kernel that does not opt in. Preemption in slices (paamd
   * --gpu-preempt, docs/gpu.md): a request of a lower bucket runs as cuda_slices(state, args)
   * slices, each enqueued on args->stream by run_cuda_slice(state, args, begin, end, ...) for
   * slices [begin, end), in order; between two slices the worker waits while a more urgent
   * bucket of the GPU has work. Each slice should take at most the server's slice length
   * (--gpu-slice-us), which bounds what the kernel delays more urgent work by. run_cuda must
   * still do the whole work in one call (the top bucket, and paamd without --gpu-preempt). */
  uint64_t (*cuda_slices)(void* state, const paam_kernel_args* args);
  int (*run_cuda_slice)(void* state, const paam_kernel_args* args, uint64_t begin, uint64_t end, char* err,
                        size_t err_len);
} paam_kernel_v2;

typedef struct paam_plugin_v2 {
  uint32_t abi_version;            /* PAAM_KERNEL_ABI_V2 */
  uint32_t count;
  const paam_kernel_v2* kernels;   /* valid until fini */
  void (*fini)(void);              /* frees the kernels' state; may be NULL */
} paam_plugin_v2;

/* Returns the plugin's kernels for `config` (may be ""), or NULL with a message in err (an
 * unsupported abi_version, a bad configuration, a model that does not load). */
typedef const paam_plugin_v2* (*paam_plugin_init_fn)(uint32_t abi_version, const char* config, char* err,
                                                     size_t err_len);

#ifdef __cplusplus
}
#endif

#endif /* PAAM_KERNEL_ABI_H_ */
