#include "generators/spec.h"

#include "tests/catch.h"

namespace paradnn {
namespace {

TEST_CASE("canonical names round-trip for every family", "[spec]") {
  const std::vector<std::string> names = {
      "FC/layers:4/nodes:1024/input:2000/output:1000/batch:256/torch/fp32/"
      "train",
      "CNN/block:bottleneck/blocks:2/filters:32/image:224/output:1000/"
      "batch:64/onednn/bf16/infer",
      "CNN/block:residual/blocks:1/filters:16/image:200/output:500/batch:8/"
      "torch/fp32/train",
      "RNN/cell:lstm/layers:2/embed:512/vocab:1024/length:32/batch:128/torch/"
      "fp32/train",
      "RNN/cell:gru/layers:1/embed:100/vocab:2/length:10/batch:16/torch_cuda/"
      "bf16/infer",
      "RNN/cell:rnn/layers:13/embed:900/vocab:8/length:90/batch:1024/torch/"
      "fp32/infer",
      "TRANSFORMER/layers:12/d_model:768/heads:12/ffn:3072/length:512/"
      "vocab:30522/causal:false/batch:32/onednn/bf16/train",
      "LLM/layers:2/d_model:256/heads:8/kv_heads:2/ffn:688/vocab:1000/"
      "context:512/batch:4/phase:decode/torch/fp32/infer"};
  for (const std::string& name : names) {
    Case c = ParseCaseName(name);
    CHECK(c.Name() == name);
    CHECK(ParseCaseName(c.Name()) == c);
  }
  Case c = ParseCaseName(names[3]);
  CHECK(c.model.family == "RNN");
  CHECK(c.model.Str("cell") == "lstm");
  CHECK(c.model.Int("vocab") == 1024);
  CHECK(c.backend == "torch");
  CHECK(c.dtype == DType::kFp32);
  CHECK(c.mode == Mode::kTrain);
}

TEST_CASE("every family's name starts with its prefix and keys in order",
          "[spec]") {
  for (const FamilyDef& f : Families()) {
    std::vector<std::string> values;
    for (const ParamDef& p : f.params) {
      // Heads of an even size for the decoder's rotary positions; images
      // that VGG's five pools and adaptive pool divide.
      const char* number = p.key == "d_model"                        ? "2"
                           : p.key == "heads" || p.key == "kv_heads" ? "1"
                           : p.key == "image"                        ? "224"
                                                                     : "3";
      values.push_back(p.choices.empty() ? number : p.choices.back());
    }
    ModelSpec m = ModelSpec::Make(f.name, values);
    Case c{m, "torch", DType::kBf16, Mode::kInfer};
    CHECK(c.Name().rfind(f.name + "/", 0) == 0);
    CHECK(ParseCaseName(c.Name()) == c);
  }
}

TEST_CASE("names as Google Benchmark reports them", "[spec]") {
  const std::string name =
      "FC/layers:4/nodes:1024/input:2000/output:1000/batch:256/torch/fp32/"
      "train";
  CHECK(CaseNameOf(name + "/real_time") == name);
  CHECK(CaseNameOf(name + "/iterations:5/real_time") == name);
  CHECK(CaseNameOf(name + "/iterations:5/repeats:3/real_time") == name);
  CHECK(CaseNameOf(name) == name);
  CHECK(CaseNameOf("/real_time") == "/real_time");
}

TEST_CASE("values are canonicalized", "[spec]") {
  ModelSpec m = ModelSpec::Make("FC", {"04", "1024", "2000", "1000", "256"});
  CHECK(m.Name() == "FC/layers:4/nodes:1024/input:2000/output:1000/batch:256");
}

TEST_CASE("LLM: what does not fit is refused, naming the value", "[spec]") {
  auto why = [](const std::string& name) {
    try {
      ParseCaseName(name);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string model =
      "LLM/layers:2/d_model:256/heads:8/kv_heads:2/ffn:688/vocab:1000/"
      "context:512/batch:4/phase:decode/torch/fp32/";
  CHECK_THAT(why(model + "train"),
             Catch::Matchers::ContainsSubstring("mode train: expected infer") &&
                 Catch::Matchers::ContainsSubstring("inference only"));
  CHECK_THAT(
      why("LLM/layers:2/d_model:256/heads:8/kv_heads:3/ffn:688/"
          "vocab:1000/context:512/batch:4/phase:decode/torch/fp32/infer"),
      Catch::Matchers::ContainsSubstring("kv_heads:3 does not divide heads:8"));
  CHECK_THAT(
      why("LLM/layers:2/d_model:250/heads:8/kv_heads:2/ffn:688/"
          "vocab:1000/context:512/batch:4/phase:decode/torch/fp32/infer"),
      Catch::Matchers::ContainsSubstring(
          "heads:8 does not divide d_model:250"));
  CHECK_THAT(
      why("LLM/layers:2/d_model:24/heads:8/kv_heads:2/ffn:688/"
          "vocab:1000/context:512/batch:4/phase:decode/torch/fp32/infer"),
      Catch::Matchers::ContainsSubstring("odd"));
  CHECK_THAT(why("LLM/layers:2/d_model:256/heads:8/kv_heads:2/ffn:688/"
                 "vocab:1000/context:512/batch:4/phase:serve/torch/fp32/infer"),
             Catch::Matchers::ContainsSubstring("serve"));
}

TEST_CASE("bad names say what is wrong and what was expected", "[spec]") {
  using Catch::Matchers::ContainsSubstring;
  CHECK_THROWS_WITH(
      ParseCaseName("TRANSFORMER/layers:2/d_model:100/heads:8/ffn:64/length:8/"
                    "vocab:10/causal:true/batch:2/torch/fp32/train"),
      ContainsSubstring(
          "heads:8 does not divide d_model:100: expected a d_model that "
          "is a multiple of heads"));
  CHECK_THROWS_WITH(
      ParseCaseName("TRANSFORMER/layers:2/d_model:16/heads:8/ffn:64/length:8/"
                    "vocab:10/causal:maybe/batch:2/torch/fp32/train"),
      ContainsSubstring("'maybe'") && ContainsSubstring("false, true"));
  CHECK_THROWS_WITH(
      ParseCaseName("MLP/layers:4"),
      ContainsSubstring("'MLP' is not a model family") &&
          ContainsSubstring("FC, CNN, RNN, DLRM, VGG, MOBILENET_V2, "
                            "EFFICIENTNET, CONVNEXT, INCEPTION, "
                            "TRANSFORMER, LLM"));
  CHECK_THROWS_WITH(
      ParseCaseName("FC/layers:4/nodes:1024/torch/fp32/train"),
      ContainsSubstring(
          "expected FC/layers:<value>/nodes:<value>/input:<value>"));
  CHECK_THROWS_WITH(
      ParseCaseName("FC/nodes:4/layers:1024/input:2000/output:1000/batch:256/"
                    "torch/fp32/train"),
      ContainsSubstring("segment 'nodes:4' should start with 'layers:'"));
  CHECK_THROWS_WITH(
      ParseCaseName("FC/layers:0/nodes:1024/input:2000/output:1000/batch:256/"
                    "torch/fp32/train"),
      ContainsSubstring(
          "'0' is not a valid layers: expected a positive integer"));
  CHECK_THROWS_WITH(
      ParseCaseName("CNN/block:dense/blocks:2/filters:32/image:224/"
                    "output:1000/batch:64/torch/fp32/train"),
      ContainsSubstring(
          "'dense' is not a valid block: expected one of residual, "
          "bottleneck"));
  CHECK_THROWS_WITH(
      ParseCaseName("FC/layers:4/nodes:1024/input:2000/output:1000/batch:256/"
                    "torch/fp8/train"),
      ContainsSubstring(
          "'fp8' is not a data type: expected fp32, bf16 or fp16"));
  CHECK_THROWS_WITH(
      ParseCaseName("FC/layers:4/nodes:1024/input:2000/output:1000/batch:256/"
                    "torch/fp32/eval"),
      ContainsSubstring("'eval' is not a mode: expected train or infer"));
}

}  // namespace
}  // namespace paradnn
