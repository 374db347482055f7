// A model's step time estimated from its bricks' times (DLBricks), with its
// uncertainty, and the calibration a sample of plain model runs gives the
// estimates. Pure arithmetic on value types: the core times the bricks and
// the models, this says what their times add up to (docs/bricks.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bricks/bricks.h"
#include "generators/cost.h"

namespace paradnn {

// A brick's time per step from its steps: their median, and the standard
// error of that median (1.2533 sigma / sqrt(n), sigma from the median
// absolute deviation, so that one preempted step moves neither).
struct BrickTime {
  double ms = 0;
  double spread_ms = 0;
};
// None for no steps.
std::optional<BrickTime> TimeOfSteps(std::vector<double> steps_ms);

// What a brick measured: its warm steps (its data where its last step left
// them) and, where a model it is in needs them, its cold steps (after
// Runner::Cool: the caches full of other data, its input read back in).
struct BrickTimes {
  BrickTime warm;
  std::optional<BrickTime> cold;
};

// A model as its bricks: one per layer (BricksOf; then its gradient sums,
// GradientSumsOf), runs of recurrent layers timed as chains (StacksOf), and
// the two bricks of a step's fixed cost (StepCostBricks) of its context.
// Indices are into the `times` EstimateModel is given.
struct ModelBricks {
  std::vector<int> layers;
  struct Stack {
    size_t first = 0;  // into `layers`
    int layers = 0;
    int chain = 0;
  };
  std::vector<Stack> stacks;
  std::vector<int> step_cost;  // {one ReLU, two ReLUs}, or none
  // Per layer, the part of its cold time over its warm one the model's
  // step pays (ColdParts), and whether the model's step outgrows the
  // caches at all (ModelIsCold).
  std::vector<double> cold_parts;
  bool cold = false;
};

// Whether a model's step, `bytes` by the cost model, leaves a layer's data
// in memory by the time the next step reads it again: a step reads its
// bytes in the same order every time, and a cache under least-recently-used
// replacement that holds less than that cycle keeps none of it. What a
// step's threads keep on chip is their L2s and the L3 beyond them (a
// victim L3 on AMD, non-inclusive on Intel since Skylake-SP).
bool ModelIsCold(int64_t bytes, int64_t l2_bytes, int threads,
                 int64_t l3_bytes);

// Per layer of a model, the part of its brick's extra cold time it pays
// inside the model: all of it, except where the backend recycles within a
// step (Backend::RecyclesWithinStep) and an earlier layer outside a stack
// ran the same brick: that layer's tensors go to the blocks the earlier one
// just used, still cached, and it pays the part of its bytes the step does
// not recycle (in inference its weights; in training all but the gradients
// backward frees as it goes: the cost model's gradient_bytes).
std::vector<double> ColdParts(const std::vector<int>& layers,
                              const std::vector<ModelBricks::Stack>& stacks,
                              const std::vector<Cost>& brick_costs,
                              bool recycles, Mode mode, DType dtype);

// The fixed cost of a step (StepCostBricks): twice the one-ReLU brick's
// time less the two-ReLU chain's, kept between 0 and the one-ReLU brick's
// (noise can put the difference outside). 0 without them.
double StepCostMs(const ModelBricks& model,
                  const std::vector<std::optional<BrickTimes>>& times);

// A model's estimated step time: a step's fixed cost once, and for each
// layer (or run timed as a chain, StackMs) its brick's warm time beyond the
// fixed cost (never below 0) and, where the model is cold, its part of the
// brick's cold time over the warm one. spread_ms adds the bricks' spreads,
// each brick as often as the model has it (a brick's error repeats with
// it). None where a brick has no time.
std::optional<BrickTime> EstimateModel(
    const ModelBricks& model,
    const std::vector<std::optional<BrickTimes>>& times);

// Calibration on a sample of plain model runs (--paradnn_bricks_check): a
// factor per group of models that an estimate is multiplied by. For each
// model, the factor is fit on the measured models of its group other than
// itself (leave one out), so that a measured model's calibrated error is
// the error of an estimate that never saw it: the error reported for the
// checked models is what the unchecked ones can expect.
struct CalibrationPoint {
  std::string family;   // FC, CNN, ...
  std::string context;  // backend/dtype/mode
  double estimate_ms = 0;
  std::optional<double> measured_ms;
};
struct Factor {
  double value = 1;
  // The relative spread of an estimate so calibrated: the sample standard
  // deviation of the log ratios it was fit on, times sqrt(1 + 1/n) (the
  // spread of a new model's ratio about a mean of n); 0 where none was fit.
  double spread = 0;
  int models = 0;     // fit on; 0: not calibrated
  std::string scope;  // "CNN/torch/fp32/train", "torch/fp32/train", ""
};
// A factor is fit where at least this many other measured models share
// the model's family and context, else its context: a geometric mean of
// fewer carries one model's noise into every estimate it scales.
constexpr int kMinCalibrationModels = 3;
std::vector<Factor> Calibrate(const std::vector<CalibrationPoint>& points);

// Whether the factors bring the measured models' estimates nearer their
// plain times than none do, each model with its leave-one-out factor: the
// mean |estimate / plain - 1| both ways. Where they do not (the checked
// models met other moments of the machine than the bricks did, and their
// factor carries those moments into every estimate), the estimates are
// left uncalibrated, and their spread is the measured models' root mean
// square log error (Uncalibrated).
struct CalibrationCheck {
  int models = 0;
  double calibrated_error = 0, uncalibrated_error = 0;
  bool applied = false;
};
CalibrationCheck CheckCalibration(const std::vector<CalibrationPoint>& points,
                                  const std::vector<Factor>& factors);
// Factors of 1 for every point, each with the spread of the measured
// points' log ratios (root mean square) and their count; scope "none".
std::vector<Factor> Uncalibrated(const std::vector<CalibrationPoint>& points);

}  // namespace paradnn
