// Bindings of the client library: paam._core.Client and helpers. The Pythonic API (typed
// kernels, futures, errors) lives in paam/client.py on top of this thin layer.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <time.h>

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "paam/client.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// Raises the paam.errors exception that matches the status (paam.errors.from_code).
[[noreturn]] void Raise(const paam::Status& s) {
  nb::object exc = nb::module_::import_("paam.errors").attr("from_code")(static_cast<int>(s.code()), s.message());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw nb::python_error();
}

void Check(const paam::Status& s) {
  if (!s.ok()) Raise(s);
}

paam::TimingModel TimingFromDict(const nb::dict& d) {
  paam::TimingModel t;
  auto get = [&](const char* key) -> nb::object { return d.contains(key) ? nb::object(d[key]) : nb::none(); };
  t.chain = nb::cast<std::string>(d["chain"]);
  if (auto v = get("callback_index"); !v.is_none()) t.callback_index = nb::cast<uint32_t>(v);
  if (auto v = get("chain_length"); !v.is_none()) t.chain_length = nb::cast<uint32_t>(v);
  t.period_ms = nb::cast<double>(d["period_ms"]);
  if (auto v = get("deadline_ms"); !v.is_none()) t.deadline_ms = nb::cast<double>(v);
  if (auto v = get("cpu_wcet_ms"); !v.is_none()) t.cpu_wcet_ms = nb::cast<double>(v);
  if (auto v = get("segments_ms"); !v.is_none()) t.segments_ms = nb::cast<std::vector<double>>(v);
  if (auto v = get("executor"); !v.is_none()) t.executor = nb::cast<std::string>(v);
  if (auto v = get("executor_cpu"); !v.is_none()) t.executor_cpu = nb::cast<int32_t>(v);
  if (auto v = get("executor_priority"); !v.is_none()) t.executor_priority = nb::cast<int32_t>(v);
  if (auto v = get("executor_wait"); !v.is_none()) {
    auto w = paam::ParseWaitMode(nb::cast<std::string>(v));
    if (!w) Raise(paam::Status(paam::Errc::kInvalidArgument, "executor_wait must be spin, suspend or hybrid"));
    t.executor_wait = *w;
  }
  if (auto v = get("best_effort"); !v.is_none()) t.best_effort = nb::cast<bool>(v);
  return t;
}

// (kernel, input handle, input offset, input bytes, output handle, output offset, output bytes, gpu)
using DeviceDecl = std::tuple<std::string, nb::bytes, uint64_t, uint64_t, nb::bytes, uint64_t, uint64_t, int>;

paam::IpcHandle HandleFrom(const nb::bytes& b, const std::string& kernel, const char* what) {
  if (b.size() != paam::kIpcHandleBytes) {
    Raise(paam::Status(paam::Errc::kInvalidArgument,
                       "device buffers of '" + kernel + "': the " + what + " handle must be " +
                           std::to_string(paam::kIpcHandleBytes) + " bytes (cudaIpcMemHandle_t), got " +
                           std::to_string(b.size())));
  }
  paam::IpcHandle h{};
  std::memcpy(h.data(), b.c_str(), h.size());
  return h;
}

class PyClient {
 public:
  PyClient(const std::string& socket_path, const std::string& name, uint32_t priority,
           const std::vector<std::tuple<std::string, uint64_t, uint64_t>>& kernels, const std::string& wait,
           std::optional<nb::dict> timing, int unit, bool direct, const std::string& direct_backend,
           int direct_device_cpu, const std::vector<std::string>& plugins, uint64_t hybrid_spin_ns,
           int connect_timeout_ms, const std::vector<DeviceDecl>& device, double deadline_ms) {
    paam::ClientOptions o;
    o.deadline_ms = deadline_ms;
    o.socket_path = socket_path;
    o.name = name;
    o.priority = priority;
    for (const auto& [k, in, out] : kernels) o.kernels.push_back({k, in, out, std::nullopt});
    for (const auto& [k, ih, ioff, ibytes, oh, ooff, obytes, gpu] : device) {
      paam::DeviceBuffers d;
      d.input_handle = HandleFrom(ih, k, "input");
      d.input_offset = ioff;
      d.input_bytes = ibytes;
      d.output_handle = HandleFrom(oh, k, "output");
      d.output_offset = ooff;
      d.output_bytes = obytes;
      d.gpu = gpu;
      bool found = false;
      for (auto& decl : o.kernels) {
        if (decl.name == k) {
          decl.device = d;
          found = true;
        }
      }
      if (!found) Raise(paam::Status(paam::Errc::kUnknownKernel, "device buffers for '" + k + "', which is not declared"));
    }
    auto w = paam::ParseWaitMode(wait);
    if (!w) Raise(paam::Status(paam::Errc::kInvalidArgument, "wait must be 'spin', 'suspend' or 'hybrid', got '" + wait + "'"));
    o.wait = *w;
    if (timing) o.timing = TimingFromDict(*timing);
    o.unit = unit;
    o.direct = direct;
    o.direct_backend = direct_backend;
    o.direct_device_cpu = direct_device_cpu;
    o.plugins = plugins;
    o.hybrid_spin_ns = hybrid_spin_ns;
    o.connect_timeout_ms = connect_timeout_ms;
    paam::Result<std::unique_ptr<paam::Client>> c = paam::Status();
    {
      nb::gil_scoped_release release;
      c = paam::Client::Connect(o);
    }
    if (!c.ok()) Raise(c.status());
    client_ = std::move(c.value());
  }

  // For calls that hold the GIL throughout: close() needs the GIL to begin, so none of them
  // can run while it does; once it has begun they get kClosed.
  paam::Client& get() {
    if (closing_) Raise(paam::Status(paam::Errc::kClosed, "client is closed"));
    return *client_;
  }

  // Deregisters, after every call in flight without the GIL on other threads has returned: the
  // C++ Client must not be closed under them (paam/client.h), and Python code closes clients
  // from any thread (an executor shut down while a callback waits for its request). Calls that
  // come after it begins get kClosed. Idempotent; a second close() while one runs returns at
  // once. The regions stay mapped: the numpy views of input_view/output_view own this object,
  // so nanobind destroys it, and the C++ Client with it (which unmaps), only after the last
  // view is gone; until then a view left over from before close() is still memory.
  void close() {
    if (closing_) return;
    closing_ = true;
    nb::gil_scoped_release release;
    {
      std::unique_lock<std::mutex> lock(mu_);
      idle_.wait(lock, [this] { return in_flight_ == 0; });
    }
    client_->Deregister();
  }
  bool closed() const { return closing_; }

  // A call that runs without the GIL (it may block until its request completes): counted from
  // before the GIL is released until after it is taken back, so that close() waits for it.
  class InFlight {
   public:
    explicit InFlight(PyClient& c) : c_(c), client_(c.get()) {
      std::lock_guard<std::mutex> lock(c.mu_);
      ++c.in_flight_;
    }
    ~InFlight() {
      std::lock_guard<std::mutex> lock(c_.mu_);
      if (--c_.in_flight_ == 0) c_.idle_.notify_all();
    }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    paam::Client& client() { return client_; }

   private:
    PyClient& c_;
    paam::Client& client_;
  };

 private:
  std::unique_ptr<paam::Client> client_;  // set by the constructor; freed with this object (see close())
  bool closing_ = false;  // read and written with the GIL held
  std::mutex mu_;
  std::condition_variable idle_;
  int in_flight_ = 0;
};

using ByteView = nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>;

void ParamsFrom(const std::vector<uint64_t>& in, uint64_t out[4]) {
  if (in.size() > 4) Raise(paam::Status(paam::Errc::kInvalidArgument, "at most 4 kernel parameters"));
  for (int i = 0; i < 4; ++i) out[i] = i < static_cast<int>(in.size()) ? in[static_cast<size_t>(i)] : 0;
}

}  // namespace

void BindClient(nb::module_& m) {
  nb::class_<PyClient>(m, "Client", "Low-level client; use paam.Client instead.")
      .def(nb::init<const std::string&, const std::string&, uint32_t,
                    const std::vector<std::tuple<std::string, uint64_t, uint64_t>>&, const std::string&,
                    std::optional<nb::dict>, int, bool, const std::string&, int, const std::vector<std::string>&,
                    uint64_t, int, const std::vector<DeviceDecl>&, double>(),
           "socket_path"_a, "name"_a, "priority"_a, "kernels"_a, "wait"_a, "timing"_a.none(), "unit"_a,
           "direct"_a, "direct_backend"_a, "direct_device_cpu"_a, "plugins"_a, "hybrid_spin_ns"_a,
           "connect_timeout_ms"_a, "device"_a = std::vector<DeviceDecl>{}, "deadline_ms"_a = 0.0)
      .def("close", &PyClient::close)
      .def_prop_ro("closed", &PyClient::closed)
      .def("kernel_index", [](PyClient& c, const std::string& name) { return c.get().KernelIndex(name); })
      .def("kernel_names",
           [](PyClient& c) {
             std::vector<std::string> names;
             for (int k = 0; k < c.get().KernelCount(); ++k) names.push_back(c.get().KernelName(k));
             return names;
           })
      .def(
          "input_view",
          [](nb::handle self, int k) {
            auto span = nb::cast<PyClient&>(self).get().Input(k);
            size_t shape[1] = {span.size()};
            return ByteView(span.data(), 1, shape, self);
          },
          "k"_a,
          "Writable uint8 view of kernel k's input area. It keeps this client's shared memory mapped "
          "while it lives, also after close() (which takes it out of use: no request reads it).")
      .def(
          "output_view",
          [](nb::handle self, int k) {
            auto span = nb::cast<PyClient&>(self).get().Output(k);
            size_t shape[1] = {span.size()};
            return ByteView(const_cast<uint8_t*>(span.data()), 1, shape, self);
          },
          "k"_a,
          "uint8 view of kernel k's output area: the last output until the next request on k. It keeps "
          "the shared memory mapped while it lives, also after close().")
      .def(
          "call",
          [](PyClient& c, int k, uint64_t input_bytes, const std::vector<uint64_t>& params, uint64_t timeout_ns,
             bool device, uint64_t time_limit_ns) {
            uint64_t p[4];
            ParamsFrom(params, p);
            uint64_t out = 0;
            paam::Status st;
            PyClient::InFlight use(c);
            paam::Client& client = use.client();
            {
              nb::gil_scoped_release release;
              st = device ? client.SubmitDevice(k, input_bytes, p, time_limit_ns)
                          : client.Submit(k, input_bytes, p, time_limit_ns);
              if (st.ok()) st = client.Wait(k, &out, timeout_ns);
            }
            Check(st);
            return out;
          },
          "k"_a, "input_bytes"_a, "params"_a, "timeout_ns"_a = 0, "device"_a = false, "time_limit_ns"_a = 0,
          "Submit + wait. timeout_ns: this wait (0: as long as it takes); time_limit_ns: the request's\n"
          "limit, which the server enforces (0: none from this client; the server's cap applies).\n"
          "device=True runs on the device buffers declared at registration (CUDA IPC).")
      .def(
          "submit",
          [](PyClient& c, int k, uint64_t input_bytes, const std::vector<uint64_t>& params, bool device,
             uint64_t time_limit_ns) {
            uint64_t p[4];
            ParamsFrom(params, p);
            paam::Status st;
            PyClient::InFlight use(c);
            paam::Client& client = use.client();
            {
              nb::gil_scoped_release release;  // direct mode runs the kernel here
              st = device ? client.SubmitDevice(k, input_bytes, p, time_limit_ns)
                          : client.Submit(k, input_bytes, p, time_limit_ns);
            }
            Check(st);
          },
          "k"_a, "input_bytes"_a, "params"_a, "device"_a = false, "time_limit_ns"_a = 0)
      .def("has_device_buffers", [](PyClient& c, int k) { return c.get().HasDeviceBuffers(k); })
      .def(
          "wait",
          [](PyClient& c, int k, uint64_t timeout_ns) {
            uint64_t out = 0;
            paam::Status st;
            PyClient::InFlight use(c);
            paam::Client& client = use.client();
            {
              nb::gil_scoped_release release;
              st = client.Wait(k, &out, timeout_ns);
            }
            Check(st);
            return out;
          },
          "k"_a, "timeout_ns"_a = 0)
      .def("ready", [](PyClient& c, int k) { return c.get().Ready(k); })
      .def("outstanding", [](PyClient& c, int k) { return c.get().Outstanding(k); })
      .def("timestamps",
           [](PyClient& c, int k) {
             paam::RequestTimestamps t = c.get().Timestamps(k);
             nb::dict d;
             d["submitted"] = t.submitted;
             d["dequeued"] = t.dequeued;
             d["picked"] = t.picked;
             d["device_start"] = t.device_start;
             d["device_end"] = t.device_end;
             d["completed"] = t.completed;
             d["woken"] = t.woken;
             return d;
           })
      // Where the last completed request of k ran: (0 nowhere | 1 cpu | 2 cuda, ran the CPU
      // version on paamd's fallback).
      .def("ran_on",
           [](PyClient& c, int k) {
             paam::RequestTimestamps t = c.get().Timestamps(k);
             return std::make_pair(static_cast<int>(t.ran_on), t.fallback);
           })
      .def("set_release", [](PyClient& c, uint64_t release_ns) { c.get().SetRelease(release_ns); })
      .def_prop_ro("priority", [](PyClient& c) { return c.get().priority(); })
      .def_prop_ro("bucket", [](PyClient& c) { return c.get().bucket(); })
      .def_prop_ro("buckets", [](PyClient& c) { return c.get().buckets(); })
      .def_prop_ro("unit", [](PyClient& c) { return c.get().unit(); })
      .def_prop_ro("client_id", [](PyClient& c) { return c.get().client_id(); })
      .def_prop_ro("server_pid", [](PyClient& c) { return c.get().server_pid(); })
      .def_prop_ro("admission", [](PyClient& c) { return c.get().admission(); })
      .def_prop_ro("direct", [](PyClient& c) { return c.get().direct(); });

  m.def("default_socket_path", &paam::DefaultSocketPath, "Default paamd socket path.");
  m.def("builtin_kernels", &paam::BuiltinKernelSignatures, "(name, signature) of the built-in kernels.");
  m.def(
      "query_models",
      [](const std::string& socket_path, int timeout_ms) {
        paam::Result<std::string> json = paam::Status();
        {
          nb::gil_scoped_release release;
          json = paam::QueryModelsJson(socket_path, timeout_ms);
        }
        if (!json.ok()) Raise(json.status());
        return json.value();
      },
      "socket_path"_a, "timeout_ms"_a = 5000,
      "The models paamd serves, as its JSON: {\"models\": [{name, format, path, device, inputs, outputs, "
      "max_input_bytes, max_output_bytes}]} (docs/models.md).");
  m.def(
      "now_ns",
      [] {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
      },
      "CLOCK_MONOTONIC in ns: the clock of every paam timestamp.");
}
