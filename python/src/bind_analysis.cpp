// Bindings of the response-time analysis (core/src/analysis) as paam._core.rta.
// The Python face (YAML loading, CLI, plots) lives in python/paam/analysis/.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>

#include "analysis/generator.h"
#include "analysis/rta.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

namespace rta = paam::rta;

rta::Report AnalyzeOrRaise(const rta::System& system, const rta::Options& options) {
  paam::Result<rta::Report> r = [&] {
    nb::gil_scoped_release release;
    return rta::Analyze(system, options);
  }();
  if (!r.ok()) throw nb::value_error(r.status().message().c_str());
  return std::move(r).value();
}

}  // namespace

void BindAnalysis(nb::module_& m) {
  nb::module_ r = m.def_submodule("rta", "PAAM response-time analysis (see docs/analysis.md)");

  nb::enum_<rta::Wait>(r, "Wait")
      .value("SPIN", rta::Wait::kSpin)
      .value("SUSPEND", rta::Wait::kSuspend);
  nb::enum_<rta::HandlingBound>(r, "HandlingBound")
      .value("MIN", rta::HandlingBound::kMin, "min(Lemma 2, Lemma 3): the PAAM analysis")
      .value("PER_SEGMENT", rta::HandlingBound::kPerSegment, "Lemma 2 only")
      .value("PER_CHAIN", rta::HandlingBound::kPerChain, "Lemma 3 only");
  nb::enum_<rta::Blocking>(r, "Blocking")
      .value("CPU", rta::Blocking::kCpu, "a lower-priority callback's CPU WCET (ANALYSIS.md)")
      .value("CALLBACK", rta::Blocking::kCallback,
             "its CPU WCET plus its accelerator segments' handling time");

  nb::class_<rta::Accelerator>(r, "Accelerator")
      .def(nb::init<>())
      .def_rw("name", &rta::Accelerator::name)
      .def_rw("buckets", &rta::Accelerator::buckets)
      .def_rw("overhead", &rta::Accelerator::overhead)
      .def_rw("preemption", &rta::Accelerator::preemption);
  nb::class_<rta::Executor>(r, "Executor")
      .def(nb::init<>())
      .def_rw("name", &rta::Executor::name)
      .def_rw("cpu", &rta::Executor::cpu)
      .def_rw("priority", &rta::Executor::priority)
      .def_rw("wait", &rta::Executor::wait);
  nb::class_<rta::Segment>(r, "Segment")
      .def(nb::init<>())
      .def_rw("accelerator", &rta::Segment::accelerator)
      .def_rw("wcet", &rta::Segment::wcet);
  nb::class_<rta::Callback>(r, "Callback")
      .def(nb::init<>())
      .def_rw("name", &rta::Callback::name)
      .def_rw("executor", &rta::Callback::executor)
      .def_rw("wcet", &rta::Callback::wcet)
      .def_rw("segments", &rta::Callback::segments);
  nb::class_<rta::Chain>(r, "Chain")
      .def(nb::init<>())
      .def_rw("name", &rta::Chain::name)
      .def_rw("priority", &rta::Chain::priority)
      .def_rw("period", &rta::Chain::period)
      .def_rw("deadline", &rta::Chain::deadline)
      .def_rw("best_effort", &rta::Chain::best_effort)
      .def_rw("callbacks", &rta::Chain::callbacks);
  nb::class_<rta::System>(r, "System")
      .def(nb::init<>())
      .def_rw("accelerators", &rta::System::accelerators)
      .def_rw("executors", &rta::System::executors)
      .def_rw("chains", &rta::System::chains)
      .def_rw("comm_cost", &rta::System::comm_cost);

  nb::class_<rta::Options>(r, "Options")
      .def(nb::init<>())
      .def_rw("handling", &rta::Options::handling)
      .def_rw("blocking", &rta::Options::blocking)
      .def_rw("stop_at_deadline", &rta::Options::stop_at_deadline);

  nb::class_<rta::SubChainResult>(r, "SubChainResult")
      .def_ro("executor", &rta::SubChainResult::executor)
      .def_ro("first_callback", &rta::SubChainResult::first_callback)
      .def_ro("last_callback", &rta::SubChainResult::last_callback)
      .def_ro("wcrt", &rta::SubChainResult::wcrt)
      .def_ro("blocking", &rta::SubChainResult::blocking)
      .def_ro("own_cpu", &rta::SubChainResult::own_cpu)
      .def_ro("handling", &rta::SubChainResult::handling)
      .def_ro("handling_per_segment", &rta::SubChainResult::handling_per_segment)
      .def_ro("handling_per_chain", &rta::SubChainResult::handling_per_chain)
      .def_ro("interference_executor", &rta::SubChainResult::interference_executor)
      .def_ro("interference_cpu", &rta::SubChainResult::interference_cpu)
      .def_ro("segments", &rta::SubChainResult::segments)
      .def_ro("converged", &rta::SubChainResult::converged);
  nb::class_<rta::ChainResult>(r, "ChainResult")
      .def_ro("name", &rta::ChainResult::name)
      .def_ro("wcrt", &rta::ChainResult::wcrt)
      .def_ro("deadline", &rta::ChainResult::deadline)
      .def_ro("schedulable", &rta::ChainResult::schedulable)
      .def_ro("best_effort", &rta::ChainResult::best_effort)
      .def_ro("converged", &rta::ChainResult::converged)
      .def_ro("blocking", &rta::ChainResult::blocking)
      .def_ro("own_cpu", &rta::ChainResult::own_cpu)
      .def_ro("handling", &rta::ChainResult::handling)
      .def_ro("interference", &rta::ChainResult::interference)
      .def_ro("communication", &rta::ChainResult::communication)
      .def_ro("subchains", &rta::ChainResult::subchains);
  nb::class_<rta::Report>(r, "Report")
      .def_ro("chains", &rta::Report::chains)
      .def_ro("schedulable", &rta::Report::schedulable);

  r.def("validate", [](const rta::System& s) {
        paam::Status st = rta::Validate(s);
        if (!st.ok()) throw nb::value_error(st.message().c_str());
      }, "system"_a, "Raise ValueError (naming the chain and field) if the system is malformed.");
  r.def("analyze", &AnalyzeOrRaise, "system"_a, "options"_a = rta::Options(),
        "Bounds of every chain; ValueError on a malformed system.");
  r.def("assign_buckets", &rta::AssignBuckets, "system"_a,
        "[accelerator][chain] -> bucket (0 = highest), -1 where the chain does not use it.");

  nb::class_<rta::GeneratorParams>(r, "GeneratorParams")
      .def(nb::init<>())
      .def_rw("chains", &rta::GeneratorParams::chains)
      .def_rw("callbacks_per_chain", &rta::GeneratorParams::callbacks_per_chain)
      .def_rw("segments_per_callback", &rta::GeneratorParams::segments_per_callback)
      .def_rw("cpus", &rta::GeneratorParams::cpus)
      .def_rw("executors_per_cpu", &rta::GeneratorParams::executors_per_cpu)
      .def_rw("utilization_per_chain", &rta::GeneratorParams::utilization_per_chain)
      .def_rw("accelerator_share", &rta::GeneratorParams::accelerator_share)
      .def_rw("period_min", &rta::GeneratorParams::period_min)
      .def_rw("period_max", &rta::GeneratorParams::period_max)
      .def_rw("buckets", &rta::GeneratorParams::buckets)
      .def_rw("overhead", &rta::GeneratorParams::overhead)
      .def_rw("preemption", &rta::GeneratorParams::preemption)
      .def_rw("wait", &rta::GeneratorParams::wait);
  nb::class_<rta::StudyCounts>(r, "StudyCounts")
      .def_ro("sets", &rta::StudyCounts::sets)
      .def_ro("schedulable_min", &rta::StudyCounts::schedulable_min)
      .def_ro("schedulable_per_segment", &rta::StudyCounts::schedulable_per_segment)
      .def_ro("schedulable_per_chain", &rta::StudyCounts::schedulable_per_chain);

  auto check = [](const rta::GeneratorParams& p) {
    paam::Status st = rta::ValidateGeneratorParams(p);
    if (!st.ok()) throw nb::value_error(st.message().c_str());
  };
  r.def("generate_chain_set", [check](const rta::GeneratorParams& p, uint64_t seed) {
        check(p);
        return rta::GenerateChainSet(p, seed);
      }, "params"_a, "seed"_a, "A random chain set (UUniFast-Discard utilizations; see generator.h).");
  r.def("run_study_batch",
        [check](const rta::GeneratorParams& p, uint64_t seed, uint64_t point, uint64_t first_set, int count) {
          check(p);
          nb::gil_scoped_release release;  // lets a thread pool use every core
          return rta::RunStudyBatch(p, seed, point, first_set, count);
        },
        "params"_a, "seed"_a, "point"_a, "first_set"_a, "count"_a,
        "Analyse `count` random sets (set i seeded by mix(seed, point, first_set + i)).");
  r.def("uunifast_discard", [](int n, double total, double max_each, uint64_t seed) {
        rta::Rng rng(seed);
        return rta::UUniFastDiscard(n, total, max_each, rng);
      }, "n"_a, "total"_a, "max_each"_a, "seed"_a);
}
