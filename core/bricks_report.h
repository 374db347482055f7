#pragma once

#include "core/run.h"

namespace paradnn {

// Prints the bricks summary and writes --paradnn_bricks_out: total and
// unique layers, benchmark time of bricks and of models, and per model the
// step time constructed from its layers against the measured one.
void ReportBricks(const Run& run);

// Fits the machine's moments (FitMoments) over every step of every case,
// each case's kinds of steps a series of their own: sets run.moments and
// each entry's sensitivity, then the way a case's time is taken
// (run.case_time) and each way's halves difference.
void FitRunMoments(Run& run);

}  // namespace paradnn
