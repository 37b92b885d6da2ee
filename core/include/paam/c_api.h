/* paam/c_api.h — the client library's C ABI, for languages other than C++ and Python.
 *
 * Every function returns a paam error code (0 = OK; values as paam::Errc in status.h) and,
 * where it takes `err`/`err_len`, writes a NUL-terminated message there on failure.
 * Thread safety: as paam::Client (client.h): different kernels may be used from different
 * threads; one kernel from one thread at a time.
 */
#ifndef PAAM_C_API_H_
#define PAAM_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct paam_client paam_client;

enum { PAAM_WAIT_SPIN = 0, PAAM_WAIT_SUSPEND = 1, PAAM_WAIT_HYBRID = 2 };

typedef struct paam_client_options {
  const char* socket_path;           /* NULL: the default path */
  const char* name;                  /* NULL: "" */
  uint32_t priority;                 /* chain priority, larger = more critical */
  uint32_t kernel_count;
  const char* const* kernel_names;   /* kernel_count names */
  const uint64_t* max_input_bytes;   /* kernel_count sizes */
  const uint64_t* max_output_bytes;  /* kernel_count sizes */
  int wait_mode;                     /* PAAM_WAIT_* */
  int direct;                        /* nonzero: run kernels in-process, no server */
} paam_client_options;

int paam_client_connect(const paam_client_options* options, paam_client** out, char* err, size_t err_len);
void paam_client_close(paam_client* client); /* deregisters and frees; NULL is ignored */

int paam_client_kernel_index(const paam_client* client, const char* kernel); /* -1 if not declared */
void* paam_client_input(paam_client* client, int kernel, uint64_t* capacity);
const void* paam_client_output(const paam_client* client, int kernel, uint64_t* capacity);

int paam_client_call(paam_client* client, int kernel, uint64_t input_bytes, const uint64_t params[4],
                     uint64_t* output_bytes, uint64_t timeout_ns, char* err, size_t err_len);
int paam_client_submit(paam_client* client, int kernel, uint64_t input_bytes, const uint64_t params[4],
                       char* err, size_t err_len);
int paam_client_wait(paam_client* client, int kernel, uint64_t* output_bytes, uint64_t timeout_ns, char* err,
                     size_t err_len);

/* Stable short name of an error code, e.g. "not_admitted". */
const char* paam_error_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* PAAM_C_API_H_ */
