// fuzz/fuzz_admission.cc — the timing models clients send with their registrations, as
// `paamd --admission analysis` takes them: each message is decoded (wire::DecodeRegisterRequest)
// and handed to the analysis admission policy, which checks it, rebuilds the chain set with it
// and runs the response-time analysis (with the policy state of the registrations before it,
// and removals in between). Properties: no crash or undefined behaviour, a decision with a
// reason every time.
// Input layout: fuzz_inputs.h (AdmissionInput, then length-prefixed messages).
#include <cstring>
#include <deque>
#include <memory>

#include "fuzz_check.h"
#include "fuzz_inputs.h"
#include "protocol/wire.h"
#include "server/admission.h"

using namespace paam;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::AdmissionInput in{};
  if (size < sizeof(in)) return -1;
  std::memcpy(&in, data, sizeof(in));
  data += sizeof(in);
  size -= sizeof(in);

  AcceleratorParams params;
  params.buckets = in.buckets % 8 + 1;
  params.overhead_ms = in.overhead * 0.01;
  params.preemption_ms = in.preemption * 0.01;
  params.comm_cost_ms = in.comm_cost * 0.01;
  std::unique_ptr<AdmissionPolicy> policy = MakeAnalysisAdmissionPolicy(params);
  PAAM_FUZZ_CHECK(policy != nullptr);

  std::deque<uint64_t> admitted;
  uint64_t next_id = 1;
  while (size >= 2) {
    const size_t n = data[0] | (size_t{data[1]} << 8);
    data += 2;
    size -= 2;
    if (n > size) break;
    auto req = wire::DecodeRegisterRequest(data, n);
    data += n;
    size -= n;
    if (!req.ok()) continue;
    AdmissionRequest a;
    a.client_id = next_id++;
    a.chain_priority = req->chain_priority;
    a.unit = req->unit >= 0 ? req->unit % 4 : 0;  // as placed by the server (at most 4 units here)
    a.timing = req->timing ? &*req->timing : nullptr;
    const AdmissionDecision d = policy->Admit(a);
    PAAM_FUZZ_CHECK(!d.reason.empty());
    if (d.admitted) admitted.push_back(a.client_id);
    if (in.remove_every != 0 && a.client_id % in.remove_every == 0 && !admitted.empty()) {
      policy->Remove(admitted.front());
      admitted.pop_front();
    }
  }
  return 0;
}
