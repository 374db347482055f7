// After a --paradnn_bricks run: every model's step time estimated from its
// bricks (bricks/estimate.h), checked against the models run plainly.
#pragma once

#include <nlohmann/json.hpp>

#include "core/run.h"

namespace paradnn {

// The run's bricks and estimates as the --paradnn_bricks_out document:
// per brick its times, per model its estimate, interval, calibration and
// plain time where it ran, and the errors against the plain runs per
// family. Null for a run without a timed brick (one that only listed).
nlohmann::ordered_json BricksResults(Run& run);

// Prints the bricks summary on stderr from BricksResults and writes
// --paradnn_bricks_out.
void ReportBricks(Run& run);

}  // namespace paradnn
