#include <nanobind/nanobind.h>
namespace nb = nanobind;
void BindClient(nb::module_& m) { (void)m; }
