// Bindings of the response-time analysis (issue 3). Nothing bound yet.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void BindAnalysis(nb::module_& m) { (void)m; }
