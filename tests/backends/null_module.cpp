// A third-party backend as a module: libparadnn_backend_null.so, found on
// PARADNN_BACKEND_PATH. Its steps do nothing; its loss is an untrained
// model's, log(classes).
#include <cmath>
#include <cstring>

#include "backends/backend.h"

namespace {

class NullRunner : public paradnn::Runner {
 public:
  explicit NullRunner(int classes) : classes_(classes) {}
  void Step() override {}
  double Loss() override { return std::log(static_cast<double>(classes_)); }
  std::vector<float> Output() override { return {}; }
  std::vector<float> Param(int) override { return {}; }
  paradnn::StepProfile Profile(int) override { return {}; }

 private:
  int classes_;
};

class NullBackend : public paradnn::Backend {
 public:
  std::string name() const override { return "null"; }
  std::string Unsupported(const paradnn::Job& job) const override {
    return job.mode == paradnn::Mode::kTrain ? "the null backend only infers"
                                             : "";
  }
  std::unique_ptr<paradnn::Runner> Prepare(
      const paradnn::Job&, const paradnn::RunOptions&) const override {
    return std::make_unique<NullRunner>(10);
  }
  std::string Describe() const override { return "null backend, does nothing"; }
};

paradnn::Backend* Make(const char* name) {
  return std::strcmp(name, "null") == 0 ? new NullBackend() : nullptr;
}

}  // namespace

PARADNN_BACKEND_MODULE(Make)
