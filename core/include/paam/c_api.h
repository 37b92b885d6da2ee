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

/* A timing model for admission control (paamd --admission analysis); see paam::TimingModel. */
typedef struct paam_timing_model {
  const char* chain;                 /* chain name, unique per server */
  uint32_t callback_index;           /* 0-based position of this callback in its chain */
  uint32_t chain_length;             /* callbacks in the chain */
  double period_ms;
  double deadline_ms;                /* 0: equal to the period */
  double cpu_wcet_ms;                /* all CPU segments of this callback together */
  uint32_t segment_count;
  const double* segments_ms;         /* segment_count accelerator segment WCETs */
  const char* executor;              /* executor name */
  int32_t executor_cpu;
  int32_t executor_priority;         /* OS real-time priority of the executor */
  int executor_wait;                 /* PAAM_WAIT_SPIN or PAAM_WAIT_SUSPEND (hybrid: as spin) */
  int best_effort;                   /* nonzero: analysed as interference, no deadline demand */
} paam_timing_model;

/* Registration fields beyond paam_client_options (a separate struct, so that the layout of
 * paam_client_options never changes). */
typedef struct paam_client_extra {
  const paam_timing_model* timing;   /* NULL: best-effort, no timing model */
  const uint8_t* callback_uuid;      /* 16 bytes; NULL: a random one */
  int unit;                          /* accelerator unit (GPU); -1: the server picks */
} paam_client_extra;

/* paam_client_connect with the fields of `extra` (NULL: as paam_client_connect). A refusal by
 * admission control returns the not_admitted code with the reason in `err`. */
int paam_client_connect_ex(const paam_client_options* options, const paam_client_extra* extra,
                           paam_client** out, char* err, size_t err_len);
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

/* 1 when the outstanding request of `kernel` has completed (paam_client_wait would not
 * block), else 0. */
int paam_client_ready(const paam_client* client, int kernel);

/* Stage timestamps (CLOCK_MONOTONIC ns) of the last completed request of `kernel`, in this
 * order: submitted, dequeued, picked, device_start, device_end, completed, woken. */
void paam_client_timestamps(const paam_client* client, int kernel, uint64_t out[7]);

/* How admission control decided (NUL-terminated, owned by the client); the bucket assigned at
 * registration (0 = highest) and the server's bucket count; the unit it runs on. */
const char* paam_client_admission(const paam_client* client);
int paam_client_bucket(const paam_client* client);
int paam_client_buckets(const paam_client* client);
int paam_client_unit(const paam_client* client);

/* Stable short name of an error code, e.g. "not_admitted". */
const char* paam_error_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* PAAM_C_API_H_ */
