// Placeholder: the response-time analysis is not built yet, so there is no analysis policy.
#include "server/admission.h"

namespace paam {
std::unique_ptr<AdmissionPolicy> MakeAnalysisAdmissionPolicy(const AcceleratorParams&) { return nullptr; }
}  // namespace paam
