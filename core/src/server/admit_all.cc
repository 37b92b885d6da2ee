#include "server/admission.h"

namespace paam {
namespace {

class AdmitAllPolicy final : public AdmissionPolicy {
 public:
  AdmissionDecision Admit(const AdmissionRequest& request) override {
    AdmissionDecision d;
    d.admitted = true;
    d.reason = request.timing != nullptr
                   ? "admitted without analysis: this server runs with admission control off (paamd --admission analysis turns it on)"
                   : "admitted as best-effort: no timing model, and admission control is off";
    return d;
  }
  void Remove(uint64_t) override {}
};

}  // namespace

std::unique_ptr<AdmissionPolicy> MakeAdmitAllPolicy() { return std::make_unique<AdmitAllPolicy>(); }

}  // namespace paam
