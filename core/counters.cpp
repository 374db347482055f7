// The figures a case reports beside its time: rates and shares from the
// cost model's FLOPs and bytes against the platform's roofs, an LLM's
// serving figures, its rounds' interval, its profile's classes, its
// hardware counts and its all-reduces.

#include <algorithm>
#include <vector>

#include "backends/backend.h"
#include "backends/profile.h"
#include "core/run.h"
#include "core/settings.h"
#include "generators/cost.h"

namespace paradnn {

std::vector<core::Counter> ProfileCounters(const Entry& e, int world_size) {
  std::vector<core::Counter> counters;
  if (e.profile) {
    const auto shares = e.profile->Shares();
    for (int c = 0; c < kOpClasses; ++c) {
      // Communication only where ranks communicate.
      if (c == static_cast<int>(OpClass::kCommunication) && world_size == 1) {
        continue;
      }
      counters.push_back({ShareCounter(static_cast<OpClass>(c)), shares[c]});
    }
  }
  for (const auto& [key, value] : e.perf) counters.push_back({key, value});
  for (const auto& [key, value] : e.child_counters) {
    counters.push_back({key, value});
  }
  return counters;
}

void AddCounters(const Run& run, const Entry& e,
                 std::vector<core::Counter>* counters) {
  // Every rate and share of a case divides by one time: step_ms, the mean
  // of its timed steps as paradnn measures each (Google Benchmark's
  // real_time wraps the same steps in its own loop, and on a busy machine
  // sometimes takes in a stall before the first).
  const double step_s = e.step_ms / 1e3;
  const double flops = static_cast<double>(e.cost.flops);
  const double bytes = static_cast<double>(e.cost.bytes);
  // Examples over all ranks (each steps its own batch); FLOP/s stays per
  // rank, against one device's peak.
  const double examples =
      static_cast<double>(e.batch) * run.settings.world.size;
  *counters = {{"step_ms", e.step_ms},
               {"examples_per_second", examples / step_s},
               {"FLOPS", flops / step_s},
               {"flop_per_step", flops},
               {"params", static_cast<double>(e.cost.params)},
               {"bytes_per_step", bytes},
               {"intensity", e.cost.intensity}};
  // The share of its device's calibrated peak; above the peak it is
  // flagged instead, as the ratio over it: the calibration missed
  // something, and no share is over 1.
  const Backend* backend = FindBackend(e.backend);
  const Roofs roofs = RoofsOf(run.settings, backend->Device(), e.dtype);
  if (roofs.peak) {
    const double share = flops / step_s / *roofs.peak;
    counters->push_back({share <= 1 ? "flops_util" : "flops_over_peak", share});
  }
  // The share of its device's calibrated memory bandwidth the cost model's
  // bytes take (the roof decode steps live on), at the bandwidth of their
  // mix of reads and writes. Steps run back to back over what the backend
  // holds: where that fits in a working set the host's caches were
  // measured on, the traffic runs at that working set's rate.
  const int64_t held =
      backend->RecyclesWithinStep() ? e.cost.streaming_memory : e.cost.memory;
  const double roof =
      bytes > 0
          ? roofs.BandwidthFor(held, e.cost.read_bytes / bytes).value_or(0)
          : 0;
  if (roof > 0) counters->push_back({"bandwidth_util", bytes / step_s / roof});
  if (e.model && e.model->model.family == "LLM") {
    // What serving benchmarks report: tokens per second (a decode step
    // gives one per sequence, a prefill step each prompt's), the latency of
    // the first token (a prefill step) or of each next one (a decode step),
    // the key/value cache.
    const ModelSpec& m = e.model->model;
    const bool prefill = m.Str("phase") == "prefill";
    const double tokens = static_cast<double>(
        e.batch * (prefill ? m.Int("context") : 1) * run.settings.world.size);
    counters->push_back({"tokens_per_second", tokens / step_s});
    counters->push_back({prefill ? "ttft_ms" : "tpot_ms", e.step_ms});
    counters->push_back(
        {"kv_cache_bytes", static_cast<double>(e.cost.kv_cache_bytes)});
  }
  // Rounds: this row's step_ms is its round's; the case's median over
  // rounds is Google Benchmark's median row, and every row carries the
  // case's interval and spread (docs/running.md, "Rounds").
  if (e.summary && e.summary->rounds > 1) {
    const RoundSummary& r = *e.summary;
    counters->push_back(
        {"steps", static_cast<double>(e.log.LastCall().size())});
    counters->push_back({"rounds", static_cast<double>(r.rounds)});
    counters->push_back({"step_ms_low", r.low});
    counters->push_back({"step_ms_high", r.high});
    counters->push_back({"round_spread", r.spread});
    counters->push_back({"unstable", r.unstable ? 1.0 : 0.0});
  }
  for (const core::Counter& c : ProfileCounters(e, run.settings.world.size))
    counters->push_back(c);
  const size_t timed = e.log.LastCall().size();
  if (run.comm && e.mode == Mode::kTrain && timed > 0) {
    // Measured around the communicator's all-reduces in the timed steps,
    // and the ring all-reduce's traffic per rank by the cost model.
    const double steps = static_cast<double>(timed);
    const double seconds = run.current.comm_seconds / steps;
    counters->push_back(
        {"allreduce_bytes_per_step", run.current.comm_bytes / steps});
    counters->push_back({"allreduce_seconds_per_step", seconds});
    counters->push_back(
        {"time_allreduce_frac", std::min(1.0, seconds / step_s)});
    counters->push_back({"allreduce_traffic_per_step",
                         static_cast<double>(AllReduceTraffic(
                             e.cost, e.dtype, run.settings.world.size))});
  }
}

}  // namespace paradnn
