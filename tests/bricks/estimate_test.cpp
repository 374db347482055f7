#include "bricks/estimate.h"

#include "tests/catch.h"

namespace paradnn {
namespace {

BrickTimes Warm(double ms) { return {{ms, 0.01}, std::nullopt}; }

TEST_CASE(
    "a brick's time is its steps' median, its spread the median's "
    "standard error from their median deviation",
    "[bricks]") {
  CHECK_FALSE(TimeOfSteps({}).has_value());
  // Median 2.5; deviations 1.5, 0.5, 0.5, 97.5: their median 1.0, so
  // sigma 1.4826 and the median's error 1.2533 x 1.4826 / 2.
  const BrickTime t = *TimeOfSteps({3, 1, 100, 2});
  CHECK(t.ms == Approx(2.5));
  CHECK(t.spread_ms == Approx(0.92907).epsilon(1e-4));
  // One preempted step moves neither.
  const BrickTime u = *TimeOfSteps({1, 1, 1, 1, 50});
  CHECK(u.ms == 1);
  CHECK(u.spread_ms == 0);
}

TEST_CASE("a model outgrows the caches past its threads' L2s and the L3",
          "[bricks]") {
  const int64_t mb = 1 << 20;
  CHECK_FALSE(ModelIsCold(10 * mb, mb, 2, 8 * mb));
  CHECK(ModelIsCold(10 * mb + 1, mb, 2, 8 * mb));
  // One thread's L2 less.
  CHECK(ModelIsCold(9 * mb + 1, mb, 1, 8 * mb));
}

TEST_CASE(
    "an estimate takes a step's fixed cost once and each layer's "
    "brick beyond it",
    "[bricks]") {
  // Bricks 0 and 1 are layers; 2 and 3 one ReLU and two: 0.3 and 0.35 ms,
  // a fixed cost of 0.25 ms.
  std::vector<std::optional<BrickTimes>> times = {Warm(1.0), Warm(2.0),
                                                  Warm(0.3), Warm(0.35)};
  ModelBricks m;
  m.layers = {0, 1, 1};
  m.step_cost = {2, 3};
  CHECK(StepCostMs(m, times) == Approx(0.25));
  // 0.25 + 0.75 + 2 x 1.75.
  CHECK(EstimateModel(m, times)->ms == Approx(4.5));
  // Each layer's spread, as often as it has the brick.
  CHECK(EstimateModel(m, times)->spread_ms == Approx(0.03));
  // Cold: each layer its part of its brick's cold time over the warm one.
  times[0]->cold = BrickTime{1.5, 0};
  times[1]->cold = BrickTime{3.0, 0};
  m.cold_parts = {1, 1, 0.5};
  CHECK(EstimateModel(m, times)->ms == Approx(4.5));  // the model is warm
  m.cold = true;
  CHECK(EstimateModel(m, times)->ms == Approx(4.5 + 0.5 + 1.0 + 0.5));
  // A brick without a time: no estimate.
  times[1].reset();
  CHECK_FALSE(EstimateModel(m, times).has_value());
  // Noise can put the fixed cost out of reach: kept within [0, one ReLU].
  std::vector<std::optional<BrickTimes>> noisy = {Warm(1.0), Warm(1.0),
                                                  Warm(0.3), Warm(0.7)};
  CHECK(StepCostMs(m, noisy) == 0);
  noisy[3] = Warm(0.1);
  CHECK(StepCostMs(m, noisy) == Approx(0.3));
}

TEST_CASE(
    "a recurrent stack takes its chain and, past it, the chain's "
    "layers' added time",
    "[bricks]") {
  // Layer brick 0 is 1 ms beyond the 0.25 ms fixed cost, the chain of 3
  // (brick 1) 3.6 ms: its second and third layers added 1.3 ms each.
  std::vector<std::optional<BrickTimes>> times = {Warm(1.25), Warm(3.85),
                                                  Warm(0.3), Warm(0.35)};
  ModelBricks m;
  m.layers = {0, 0, 0, 0, 0};
  m.stacks = {{0, 5, 1}};
  m.step_cost = {2, 3};
  CHECK(EstimateModel(m, times)->ms == Approx(0.25 + 3.6 + 2 * 1.3));
}

TEST_CASE(
    "the recycled part of a repeated layer's cold time is the share "
    "of its bytes that are not recycled",
    "[bricks]") {
  Cost c;
  c.bytes = 1000;
  c.gradient_bytes = 300;
  c.params = 100;
  const std::vector<Cost> costs = {c, c, c};
  // Training: the gradients go through recycled blocks.
  CHECK(ColdParts({0, 0, 0}, {}, costs, true, Mode::kTrain, DType::kFp32) ==
        std::vector<double>{1, 0.7, 0.7});
  // Inference: all but the weights (100 fp32 values).
  CHECK(ColdParts({0, 0, 0}, {}, costs, true, Mode::kInfer, DType::kFp32) ==
        std::vector<double>{1, 0.4, 0.4});
  // A backend with buffers of its own, or layers in a stack: all of it.
  CHECK(ColdParts({0, 0, 0}, {}, costs, false, Mode::kTrain, DType::kFp32) ==
        std::vector<double>{1, 1, 1});
  CHECK(ColdParts({0, 0, 0}, {{0, 3, 1}}, costs, true, Mode::kTrain,
                  DType::kFp32) == std::vector<double>{1, 1, 1});
}

TEST_CASE(
    "calibration: each model's factor from the other measured models "
    "of its family and context, else of its context",
    "[bricks]") {
  // Measured over estimated: 1.1, 1.2, 1.0, 1.3 for CNNs; one FC measured.
  std::vector<CalibrationPoint> p = {
      {"CNN", "torch/fp32/train", 10, 11},
      {"CNN", "torch/fp32/train", 10, 12},
      {"CNN", "torch/fp32/train", 10, 10},
      {"CNN", "torch/fp32/train", 10, 13},
      {"CNN", "torch/fp32/train", 10, std::nullopt},
      {"FC", "torch/fp32/train", 5, 6},
      {"FC", "torch/fp32/infer", 5, std::nullopt}};
  const std::vector<Factor> f = Calibrate(p);
  // The first CNN: the geometric mean of 1.2, 1.0 and 1.3.
  CHECK(f[0].value == Approx(1.159778).epsilon(1e-5));
  CHECK(f[0].models == 3);
  CHECK(f[0].scope == "CNN/torch/fp32/train");
  // Logs 0.18232, 0, 0.26236: sample deviation 0.13446, times sqrt(4/3).
  CHECK(f[0].spread == Approx(0.155265).epsilon(1e-4));
  // The unmeasured CNN: all four, (1.1 x 1.2 x 1.0 x 1.3)^(1/4).
  CHECK(f[4].value == Approx(1.144536).epsilon(1e-5));
  CHECK(f[4].models == 4);
  // The FC model: no other FC; the context's other four, the CNNs.
  CHECK(f[5].scope == "torch/fp32/train");
  CHECK(f[5].value == Approx(1.144536).epsilon(1e-5));
  // Inference: nothing measured, not calibrated.
  CHECK(f[6].value == 1);
  CHECK(f[6].models == 0);
  CHECK(f[6].scope.empty());
}

TEST_CASE(
    "a calibration is applied only where it brings the measured "
    "models nearer their plain times",
    "[bricks]") {
  // Estimates 10% under for three models, and one 10% over: the others'
  // factors pull each towards the plain time on average.
  std::vector<CalibrationPoint> p = {{"FC", "c", 9, 10},
                                     {"FC", "c", 9, 10},
                                     {"FC", "c", 9, 10},
                                     {"FC", "c", 9, 10},
                                     {"FC", "c", 5, std::nullopt}};
  CalibrationCheck check = CheckCalibration(p, Calibrate(p));
  CHECK(check.models == 4);
  CHECK(check.uncalibrated_error == Approx(0.1));
  CHECK(check.calibrated_error == Approx(0).margin(1e-12));
  CHECK(check.applied);
  // Ratios scattered about 1: the others' mean moves each one away.
  p = {{"FC", "c", 10, 8},
       {"FC", "c", 10, 12},
       {"FC", "c", 10, 9},
       {"FC", "c", 10, 11}};
  check = CheckCalibration(p, Calibrate(p));
  CHECK(check.calibrated_error > check.uncalibrated_error);
  CHECK_FALSE(check.applied);
  // Uncalibrated: factors of 1, the spread the log ratios' root mean
  // square: sqrt((log(10/8)^2 + log(10/12)^2 + log(10/9)^2 +
  // log(10/11)^2) / 4).
  const std::vector<Factor> none = Uncalibrated(p);
  REQUIRE(none.size() == 4);
  CHECK(none[0].value == 1);
  CHECK(none[0].models == 4);
  CHECK(none[0].scope == "none");
  CHECK(none[0].spread == Approx(0.160639).epsilon(1e-4));
}

}  // namespace
}  // namespace paradnn
