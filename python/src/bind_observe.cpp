// Bindings of paamd's control requests (client/control_client.h): paam._core.ControlConnection,
// the one connection behind paam.observe's stats() and Trace (python/paam/observe.py, which
// turns the JSON text into Python values).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "client/control_client.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// Raises the paam.errors exception that matches the status (paam.errors.from_code).
[[noreturn]] void Raise(const paam::Status& s) {
  nb::object exc = nb::module_::import_("paam.errors").attr("from_code")(static_cast<int>(s.code()), s.message());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw nb::python_error();
}

template <typename T>
T Take(paam::Result<T> r) {
  if (!r.ok()) Raise(r.status());
  return std::move(r.value());
}

class PyControl {
 public:
  PyControl(const std::string& socket_path, int timeout_ms) {
    paam::Result<std::unique_ptr<paam::ControlClient>> c = paam::Status();
    {
      nb::gil_scoped_release release;
      c = paam::ControlClient::Connect(socket_path, timeout_ms);
    }
    conn_ = Take(std::move(c));
  }
  std::string stats() {
    paam::Result<std::string> r = paam::Status();
    {
      nb::gil_scoped_release release;
      r = get().Stats();
    }
    return Take(std::move(r));
  }
  uint64_t trace_start(uint32_t capacity) {
    paam::Result<uint64_t> r = paam::Status();
    {
      nb::gil_scoped_release release;
      r = get().TraceStart(capacity);
    }
    return Take(std::move(r));
  }
  std::vector<std::string> trace_read() {
    paam::Result<std::vector<std::string>> r = paam::Status();
    {
      nb::gil_scoped_release release;
      r = get().TraceRead();
    }
    return Take(std::move(r));
  }
  uint64_t trace_stop() {
    paam::Result<uint64_t> r = paam::Status();
    {
      nb::gil_scoped_release release;
      r = get().TraceStop();
    }
    return Take(std::move(r));
  }
  void close() { conn_.reset(); }
  bool closed() const { return conn_ == nullptr; }

 private:
  paam::ControlClient& get() {
    if (!conn_) Raise(paam::Status(paam::Errc::kClosed, "the control connection is closed"));
    return *conn_;
  }
  std::unique_ptr<paam::ControlClient> conn_;
};

}  // namespace

void BindObserve(nb::module_& m) {
  nb::class_<PyControl>(m, "ControlConnection",
                        "A connection to paamd for statistics and tracing; use paam.observe instead.")
      .def(nb::init<const std::string&, int>(), "socket_path"_a, "timeout_ms"_a)
      .def("stats", &PyControl::stats)
      .def("trace_start", &PyControl::trace_start, "capacity"_a)
      .def("trace_read", &PyControl::trace_read)
      .def("trace_stop", &PyControl::trace_stop)
      .def("close", &PyControl::close)
      .def_prop_ro("closed", &PyControl::closed);
}
