#include "paam/c_api.h"

#include <cstring>
#include <memory>

#include "paam/client.h"

struct paam_client {
  std::unique_ptr<paam::Client> impl;
};

namespace {

int Report(const paam::Status& s, char* err, size_t err_len) {
  if (err != nullptr && err_len > 0) {
    std::strncpy(err, s.ok() ? "" : s.ToString().c_str(), err_len - 1);
    err[err_len - 1] = '\0';
  }
  return static_cast<int>(s.code());
}

}  // namespace

extern "C" {

int paam_client_connect(const paam_client_options* o, paam_client** out, char* err, size_t err_len) {
  return paam_client_connect_ex(o, nullptr, out, err, err_len);
}

int paam_client_connect_ex(const paam_client_options* o, const paam_client_extra* extra, paam_client** out,
                           char* err, size_t err_len) {
  if (o == nullptr || out == nullptr) return Report(paam::Status(paam::Errc::kInvalidArgument, "null argument"), err, err_len);
  paam::ClientOptions options;
  if (o->socket_path != nullptr) options.socket_path = o->socket_path;
  if (o->name != nullptr) options.name = o->name;
  options.priority = o->priority;
  for (uint32_t i = 0; i < o->kernel_count; ++i) {
    options.kernels.push_back({o->kernel_names[i], o->max_input_bytes[i], o->max_output_bytes[i], std::nullopt});
  }
  if (o->wait_mode < 0 || o->wait_mode > 2) {
    return Report(paam::Status(paam::Errc::kInvalidArgument, "wait_mode must be PAAM_WAIT_*"), err, err_len);
  }
  options.wait = static_cast<paam::WaitMode>(o->wait_mode);
  options.direct = o->direct != 0;
  if (extra != nullptr) {
    if (extra->callback_uuid != nullptr) {
      std::memcpy(options.callback_uuid.data(), extra->callback_uuid, options.callback_uuid.size());
    }
    options.unit = extra->unit;
    if (const paam_timing_model* t = extra->timing; t != nullptr) {
      if (t->segment_count > 0 && t->segments_ms == nullptr) {
        return Report(paam::Status(paam::Errc::kInvalidArgument, "timing: segments_ms is NULL"), err, err_len);
      }
      if (t->executor_wait < 0 || t->executor_wait > 2) {
        return Report(paam::Status(paam::Errc::kInvalidArgument, "timing: executor_wait must be PAAM_WAIT_*"), err,
                      err_len);
      }
      paam::TimingModel m;
      m.chain = t->chain != nullptr ? t->chain : "";
      m.callback_index = t->callback_index;
      m.chain_length = t->chain_length;
      m.period_ms = t->period_ms;
      m.deadline_ms = t->deadline_ms;
      m.cpu_wcet_ms = t->cpu_wcet_ms;
      m.segments_ms.assign(t->segments_ms, t->segments_ms + t->segment_count);
      m.executor = t->executor != nullptr ? t->executor : "";
      m.executor_cpu = t->executor_cpu;
      m.executor_priority = t->executor_priority;
      m.executor_wait = static_cast<paam::WaitMode>(t->executor_wait);
      m.best_effort = t->best_effort != 0;
      options.timing = std::move(m);
    }
  }
  auto client = paam::Client::Connect(options);
  if (!client.ok()) return Report(client.status(), err, err_len);
  *out = new paam_client{std::move(client.value())};
  return 0;
}

void paam_client_close(paam_client* client) { delete client; }

int paam_client_kernel_index(const paam_client* client, const char* kernel) {
  return client->impl->KernelIndex(kernel);
}

void* paam_client_input(paam_client* client, int kernel, uint64_t* capacity) {
  auto span = client->impl->Input(kernel);
  if (capacity != nullptr) *capacity = span.size();
  return span.data();
}

const void* paam_client_output(const paam_client* client, int kernel, uint64_t* capacity) {
  auto span = client->impl->Output(kernel);
  if (capacity != nullptr) *capacity = span.size();
  return span.data();
}

int paam_client_call(paam_client* client, int kernel, uint64_t input_bytes, const uint64_t params[4],
                     uint64_t* output_bytes, uint64_t timeout_ns, char* err, size_t err_len) {
  return Report(client->impl->Call(kernel, input_bytes, params, output_bytes, timeout_ns), err, err_len);
}

int paam_client_submit(paam_client* client, int kernel, uint64_t input_bytes, const uint64_t params[4], char* err,
                       size_t err_len) {
  return Report(client->impl->Submit(kernel, input_bytes, params), err, err_len);
}

int paam_client_wait(paam_client* client, int kernel, uint64_t* output_bytes, uint64_t timeout_ns, char* err,
                     size_t err_len) {
  return Report(client->impl->Wait(kernel, output_bytes, timeout_ns), err, err_len);
}

int paam_client_ready(const paam_client* client, int kernel) { return client->impl->Ready(kernel) ? 1 : 0; }

void paam_client_timestamps(const paam_client* client, int kernel, uint64_t out[7]) {
  const paam::RequestTimestamps t = client->impl->Timestamps(kernel);
  const uint64_t v[7] = {t.submitted, t.dequeued, t.picked, t.device_start, t.device_end, t.completed, t.woken};
  std::memcpy(out, v, sizeof v);
}

const char* paam_client_admission(const paam_client* client) { return client->impl->admission().c_str(); }
int paam_client_bucket(const paam_client* client) { return client->impl->bucket(); }
int paam_client_buckets(const paam_client* client) { return client->impl->buckets(); }
int paam_client_unit(const paam_client* client) { return client->impl->unit(); }

const char* paam_error_name(int code) {
  return paam::ErrcName(static_cast<paam::Errc>(code)).data();  // names are string literals
}

}  // extern "C"
