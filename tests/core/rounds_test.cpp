// Rounds in the run: the order cases take each round, and the summary
// line at the run's end.
#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "core/run.h"
#include "tests/catch.h"

namespace paradnn {
namespace {

TEST_CASE("rounds: each round runs every case once, in an order of its own",
          "[core][rounds]") {
  std::vector<int> cases(20);
  std::iota(cases.begin(), cases.end(), 3);
  std::set<std::vector<int>> orders;
  for (int round = 0; round < 10; ++round) {
    std::vector<int> order = RoundOrder(cases, 7, round);
    CHECK(order == RoundOrder(cases, 7, round));  // the seed's
    orders.insert(order);
    std::sort(order.begin(), order.end());
    CHECK(order == cases);
  }
  // 20! orders: ten rounds drawing the same one twice would be a fault.
  CHECK(orders.size() == 10);
  CHECK(RoundOrder(cases, 8, 0) != RoundOrder(cases, 7, 0));
}

TEST_CASE("rounds: the run's summary line and its unstable cases",
          "[core][rounds]") {
  Run run;
  Options o;
  o.rounds = 3;
  run.settings = ResolveSettings(o, World{}, Sweep{}, MachineDefaults{});
  run.machine_use = "1.00 of 2 CPUs busy";
  for (int i = 0; i < 3; ++i) {
    Entry e;
    e.name = "FC/case" + std::to_string(i);
    RoundSummary s;
    s.rounds = 3;
    // Intervals 20% of the median wide.
    s.median = 10.0 * (i + 1);
    s.low = 0.9 * s.median;
    s.high = 1.1 * s.median;
    s.least = 0.8 * s.median;
    s.most = 1.3 * s.median;
    s.unstable = i == 2;
    e.summary = s;
    run.cases.entries.push_back(e);
  }
  const std::vector<std::string> notes = RoundsNotes(run);
  REQUIRE(notes.size() == 2);
  CHECK(notes[0] ==
        "3 cases in 3 rounds: intervals 20% of the median wide (median; 90th "
        "percentile 20%), 1 unstable; the machine: 1.00 of 2 CPUs busy");
  CHECK(notes[1] ==
        "unstable: FC/case2: rounds 24-39 ms (median 30 ms, 3 rounds)");
}

}  // namespace
}  // namespace paradnn
