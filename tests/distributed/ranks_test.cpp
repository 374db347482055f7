// The paradnn runner as ranks of a data-parallel run, started with
// torchrun's variables: what rank 0 reports, what the others do not, and
// how ranks out of step end (an error on every rank, never a hang).
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/catch.h"
#include "tests/distributed/delay_comm.h"
#include "tests/distributed/free_port.h"
#include "tests/scratch.h"

namespace paradnn {
namespace {

using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
using test::Scratch;

const char kFc[] = "FC/layers:2/nodes:32/input:64/output:10/batch:8/";

// --paradnn_case= of the small FC model on a backend, data type and mode.
std::string FcCase(const std::string& rest) {
  return std::string("--paradnn_case=") + kFc + rest;
}

struct Rank {
  int status = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Starts one runner per entry of `args` as ranks 0, 1, ... on this host,
// rank r told that the world has worlds[r] ranks, and waits for all.
std::vector<Rank> RunRanks(const std::vector<std::string>& args,
                           const std::vector<int>& worlds) {
  const int port = test::FreePort();
  std::string script;
  for (size_t r = 0; r < args.size(); ++r) {
    const std::string base = Scratch("rank" + std::to_string(r));
    script += "(RANK=" + std::to_string(r) +
              " WORLD_SIZE=" + std::to_string(worlds[r]) +
              " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
              " " + PARADNN_RUNNER + " " + args[r] + " >" + base + ".out 2>" +
              base + ".err; echo $? >" + base + ".status) & ";
  }
  script += "wait";
  REQUIRE(std::system(("bash -c '" + script + "'").c_str()) == 0);
  std::vector<Rank> ranks(args.size());
  for (size_t r = 0; r < args.size(); ++r) {
    const std::string base = Scratch("rank" + std::to_string(r));
    ranks[r].status = std::stoi(Slurp(base + ".status"));
    ranks[r].out = Slurp(base + ".out");
    ranks[r].err = Slurp(base + ".err");
  }
  return ranks;
}

std::vector<Rank> RunRanks(const std::vector<std::string>& args, int world) {
  return RunRanks(args, std::vector<int>(args.size(), world));
}

TEST_CASE("the all-reduce's share of a step is the time spent in it",
          "[distributed][runner][serial]") {
  // Rank 0 of 2 with a communicator whose every all-reduce sleeps a known
  // time (tests/distributed/delay_comm.cpp), found before the real one: each
  // training step spends that long in it, and the step a few ms more.
  const std::string cmd =
      std::string("PARADNN_BACKEND_PATH=") + PARADNN_DELAY_COMM_DIR +
      " RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 " +
      PARADNN_RUNNER +
      " --paradnn_case=FC/layers:2/nodes:256/input:512/output:10/batch:64/"
      "torch/fp32/train --paradnn_threads=1 --paradnn_steps=5 "
      "--benchmark_format=json >" +
      Scratch("delay.out").string() + " 2>" + Scratch("delay.err").string();
  const int status = std::system(cmd.c_str());
  INFO(Slurp(Scratch("delay.err").string()));
  REQUIRE(status == 0);
  const json b =
      json::parse(Slurp(Scratch("delay.out").string()))["benchmarks"][0];
  const double delay_s = test::kAllReduceDelayUs / 1e6;
  // A sleep ends on time or later; on a machine this test has to itself,
  // less than 2 ms later.
  const double late_s = 2e-3;
  const double seconds = b["allreduce_seconds_per_step"];
  CHECK(seconds >= delay_s);
  CHECK(seconds <= delay_s + late_s);
  const double step_s = b["step_ms"].get<double>() / 1e3;
  REQUIRE(step_s > delay_s);
  CHECK(b["time_allreduce_frac"].get<double>() >= delay_s / step_s);
  CHECK(b["time_allreduce_frac"].get<double>() <= (delay_s + late_s) / step_s);
}

TEST_CASE("ranks train a case together and rank 0 reports for all",
          "[distributed][runner]") {
  const std::string out = Scratch("results.json");
  const std::string args = FcCase("torch/fp32/train") + " " +
                           FcCase("onednn/fp32/train") +
                           " --paradnn_threads=1 "
                           "--paradnn_steps=3 --benchmark_format=json "
                           "--benchmark_out_format=json --benchmark_out=" +
                           out;
  const std::vector<Rank> ranks = RunRanks({args, args}, 2);
  INFO(ranks[0].err << ranks[1].err);
  REQUIRE(ranks[0].status == 0);
  REQUIRE(ranks[1].status == 0);
  // Silent unless --paradnn_all_ranks: no results, no context, and the
  // file both were asked to write is rank 0's alone.
  CHECK(ranks[1].out.empty());
  CHECK(ranks[1].err.find("paradnn_world_size") == std::string::npos);
  const json file = json::parse(Slurp(out));
  CHECK(file["context"]["paradnn_rank"] == "0");
  CHECK(file["benchmarks"].size() == 2);
  CHECK(!std::filesystem::exists(out + ".rank1"));
  const json j = json::parse(ranks[0].out);
  CHECK(j["context"]["paradnn_world_size"] == "2");
  CHECK(j["context"]["paradnn_rank"] == "0");
  REQUIRE(j["benchmarks"].size() == 2);
  // 3,466 parameters (tests/runner: counted by hand) in fp32.
  const double gradients = 3466 * 4;
  for (const json& b : j["benchmarks"]) {
    INFO(b["name"]);
    CHECK(b["iterations"] == 3);
    CHECK(b["allreduce_traffic_per_step"] == gradients);  // 2 (2-1)/2 of it
    if (b["name"].get<std::string>().find("/torch/") != std::string::npos) {
      CHECK(b["allreduce_bytes_per_step"] == gradients);
    } else {
      // oneDNN's blocked formats pad some gradients.
      CHECK(b["allreduce_bytes_per_step"] >= gradients);
    }
    // The all-reduce's seconds per step over the step's, on the clock of
    // the other rates.
    const double step_s = b["step_ms"].get<double>() / 1e3;
    const double share = b["time_allreduce_frac"];
    CHECK((share > 0 && share < 1));
    CHECK(share ==
          Approx(b["allreduce_seconds_per_step"].get<double>() / step_s)
              .epsilon(1e-9));
    // Examples over both ranks: 2 x 8 per step.
    CHECK(b["examples_per_second"].get<double>() ==
          Approx(16 / step_s).epsilon(1e-9));
  }
}

TEST_CASE("with --paradnn_all_ranks every rank reports", "[distributed]") {
  const std::string args = FcCase("torch/fp32/train") +
                           " --paradnn_threads=1 "
                           "--paradnn_steps=2 --paradnn_all_ranks "
                           "--benchmark_format=json";
  const std::vector<Rank> ranks = RunRanks({args, args}, 2);
  INFO(ranks[0].err << ranks[1].err);
  REQUIRE(ranks[1].status == 0);
  CHECK(json::parse(ranks[1].out)["context"]["paradnn_rank"] == "1");
}

TEST_CASE("ranks at different cases fail them on every rank, then go on",
          "[distributed]") {
  // The ranks run the same two cases in opposite orders: they disagree at
  // each, and each rank fails both, without waiting for a timeout.
  const std::string common =
      " --paradnn_threads=1 --paradnn_steps=2 --paradnn_dist_timeout=20";
  const std::string a = FcCase("torch/fp32/train");
  const std::string b = FcCase("torch/fp32/infer");
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Rank> ranks =
      RunRanks({a + " " + b + common, b + " " + a + common}, 2);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  INFO(ranks[0].err << ranks[1].err);
  CHECK(ranks[0].status == 1);
  CHECK(ranks[1].status == 1);
  for (const Rank& r : ranks) {
    CHECK_THAT(r.err, ContainsSubstring("the ranks are at different cases"));
  }
  CHECK(seconds < 20);  // no collective waited for its timeout
}

TEST_CASE("a rank that dies fails the case on the others within the timeout",
          "[distributed]") {
  // Rank 1 runs one case of two and exits: rank 0's second case finds its
  // peer gone.
  const std::string common =
      " --paradnn_threads=1 --paradnn_steps=2 --paradnn_dist_timeout=10";
  const std::string a = FcCase("torch/fp32/train");
  const std::string b = FcCase("onednn/fp32/train");
  const std::vector<Rank> ranks =
      RunRanks({a + " " + b + common, a + common}, 2);
  INFO(ranks[0].err << ranks[1].err);
  CHECK(ranks[1].status == 0);
  CHECK(ranks[0].status == 1);
  CHECK_THAT(ranks[0].err,
             ContainsSubstring("paradnn: rank 0: " + std::string(kFc) +
                               "onednn/fp32/train failed"));
  CHECK_THAT(ranks[0].err, ContainsSubstring("1 passed, 0 skipped, 1 failed"));
}

TEST_CASE("a rank that never comes ends the rendezvous with a clear error",
          "[distributed]") {
  const std::vector<Rank> ranks =
      RunRanks({FcCase("torch/fp32/train") +
                " --paradnn_dist_timeout=2 --paradnn_steps=2"},
               2);
  CHECK(ranks[0].status == 1);
  CHECK_THAT(ranks[0].err,
             ContainsSubstring("rank(s) 1 of 2 did not join within 2 s"));
}

TEST_CASE("ranks started with different world sizes are told so",
          "[distributed]") {
  const std::string args = FcCase("torch/fp32/train") +
                           " --paradnn_dist_timeout=3 "
                           "--paradnn_steps=2";
  const std::vector<Rank> ranks = RunRanks({args, args}, {2, 3});
  CHECK(ranks[0].status == 1);
  CHECK(ranks[1].status == 1);
  // Rank 0 sees rank 1's count; rank 1 waits for a rank 2 that never comes
  // (or for rank 0's store, gone when rank 0 gave up).
  CHECK_THAT(ranks[0].err,
             ContainsSubstring("rank 1 was started with a world size "
                               "of 3, this rank (0) with 2"));
  CHECK_THAT(
      ranks[1].err,
      ContainsSubstring("were all ranks started, with the same world size?"));
}

TEST_CASE("flags that cannot work across ranks are refused", "[distributed]") {
  const std::vector<Rank> ranks =
      RunRanks({FcCase("torch/fp32/train") + " --paradnn_isolate"}, 2);
  CHECK(ranks[0].status != 0);
  CHECK_THAT(ranks[0].err,
             ContainsSubstring("--paradnn_isolate runs cases in child "
                               "processes, which cannot join the 2 ranks"));
}

}  // namespace
}  // namespace paradnn
