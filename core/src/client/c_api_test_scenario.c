/* The C ABI used from C (this file is compiled as C, so c_api.h is checked as a C header):
 * registration with a timing model, admission's answer, the lowest bucket for a client without
 * one, asynchronous submit / ready / wait, timestamps and a refusal. Driven by c_api_test.cc
 * against a paamd with two buckets and --admission analysis. Returns 0, or the failed line
 * with a message in `msg`. */
#include <stdio.h>
#include <string.h>

#include "paam/c_api.h"

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      snprintf(msg, msg_len, "%s:%d: %s (err: %s)", __FILE__, __LINE__, #cond, err); \
      goto fail;                                                                 \
    }                                                                            \
  } while (0)

int paam_c_api_scenario(const char* socket_path, char* msg, size_t msg_len) {
  char err[512] = "";
  const char* names[] = {"spin"};
  uint64_t in[] = {0}, out[] = {8};
  paam_client_options o = {socket_path, "c-timed", 10, 1, names, in, out, PAAM_WAIT_SUSPEND, 0};
  double segments[] = {5.0};
  paam_timing_model t = {"c-chain", 0, 1, 50.0, 0.0, 1.0, 1, segments, "c-exec", 0, 90,
                         PAAM_WAIT_SUSPEND, 0};
  uint8_t uuid[16];
  paam_client_extra extra = {&t, uuid, -1};
  paam_client *timed = NULL, *plain = NULL, *greedy = NULL;
  uint64_t params[4] = {5000000, 0, 0, 0}, out_bytes = 0, ts[7];
  int k, i, rc;
  memset(uuid, 0x5a, sizeof uuid);

  CHECK(paam_client_connect_ex(&o, &extra, &timed, err, sizeof err) == 0);
  CHECK(strstr(paam_client_admission(timed), "admitted: all 1 critical chains schedulable") != NULL);
  CHECK(paam_client_bucket(timed) == 0 && paam_client_buckets(timed) == 2 && paam_client_unit(timed) == 0);
  k = paam_client_kernel_index(timed, "spin");
  CHECK(k == 0);
  CHECK(paam_client_submit(timed, k, 0, params, err, sizeof err) == 0);
  CHECK(paam_client_ready(timed, k) == 0); /* 5 ms of spin cannot be done yet */
  CHECK(paam_client_wait(timed, k, &out_bytes, 0, err, sizeof err) == 0);
  CHECK(out_bytes == 8);
  paam_client_timestamps(timed, k, ts);
  for (i = 0; i < 7; ++i) CHECK(ts[i] != 0);
  for (i = 1; i < 7; ++i) CHECK(ts[i] >= ts[i - 1]);
  CHECK(ts[4] - ts[3] >= 4000000); /* the device stage holds the 5 ms spin */

  /* Without a timing model: best-effort, in the lowest bucket, whatever its priority. */
  o.name = "c-plain";
  o.priority = 99;
  CHECK(paam_client_connect_ex(&o, NULL, &plain, err, sizeof err) == 0);
  CHECK(paam_client_bucket(plain) == 1);
  CHECK(strstr(paam_client_admission(plain), "best-effort") != NULL);

  /* A more critical chain (period 100, one 40 ms segment) that fits itself (1 + 40.05 + 5.05
   * blocking) but, twice per window with the carry-in, would make c-chain miss: refused, and
   * the refusal names c-chain. */
  o.name = "c-greedy";
  o.priority = 20;
  segments[0] = 40.0;
  t.period_ms = 100.0;
  t.chain = "greedy";
  t.executor = "g-exec";
  t.executor_cpu = 1;
  extra.callback_uuid = NULL;
  rc = paam_client_connect_ex(&o, &extra, &greedy, err, sizeof err);
  CHECK(rc != 0 && strcmp(paam_error_name(rc), "not_admitted") == 0);
  CHECK(strstr(err, "c-chain") != NULL && greedy == NULL);

  paam_client_close(plain);
  paam_client_close(timed);
  return 0;
fail:
  paam_client_close(plain);
  paam_client_close(timed);
  paam_client_close(greedy);
  return 1;
}
