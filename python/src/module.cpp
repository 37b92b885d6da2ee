// The single native module of the paam package: paam._core.
// Each part of the core binds itself in its own file.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void BindClient(nb::module_& m);
void BindAnalysis(nb::module_& m);
void BindObserve(nb::module_& m);

NB_MODULE(_core, m) {
  m.doc() = "paam native core: client, kernels and response-time analysis";
  BindClient(m);
  BindAnalysis(m);
  BindObserve(m);
}
