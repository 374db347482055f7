// Data-parallel training against one rank: two ranks, each stepping on its
// own half of the examples with the gradients averaged between them, end
// with the weights of one rank that steps on both halves at once; and the
// launcher's environment read as each launcher sets it.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "backends/backend.h"
#include "distributed/world.h"
#include "generators/init.h"
#include "generators/sweep.h"
#include "tests/backends/values.h"
#include "tests/catch.h"
#include "tests/distributed/free_port.h"
#include "tests/scratch.h"

extern char** environ;

namespace paradnn {
namespace {

using test::Scratch;

constexpr int kSteps = 3;
constexpr int kBatch = 4;  // per rank
constexpr char kRankTest[] = "one rank of a data-parallel run";

// Models whose loss is a mean over examples that do not interact: batch
// norm's statistics would be each rank's own (as in DistributedDataParallel
// without SyncBatchNorm), so CNNs are left out.
const char* const kModels[] = {
    "FC/layers:2/nodes:32/input:64/output:10/batch:",
    "RNN/cell:lstm/layers:2/embed:16/vocab:32/length:5/batch:",
    "RNN/cell:gru/layers:1/embed:16/vocab:32/length:5/batch:",
    "TRANSFORMER/layers:1/d_model:32/heads:4/ffn:64/length:8/vocab:50/"
    "causal:true/batch:"};

struct Env {
  Env(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~Env() { unsetenv(name_); }
  const char* name_;
};

// Every parameter after the steps, minus its initial value: the updates,
// which a wrong gradient cannot hide in behind the weights' scale.
std::vector<float> Updates(const Case& c, Runner& runner) {
  const Graph g = c.model.BuildGraph();
  std::vector<float> out;
  for (int p = 0; p < static_cast<int>(g.Params().size()); ++p) {
    const std::vector<float> now = runner.Param(p), then = InitParam(g, 5, p);
    for (size_t i = 0; i < now.size(); ++i) out.push_back(now[i] - then[i]);
  }
  return out;
}

std::vector<float> Train(const Case& c, Communicator* comm,
                         int64_t first_example) {
  RunOptions opt;
  opt.threads = 1;
  opt.seed = 5;
  opt.warmup = 0;
  opt.comm = comm;
  opt.first_example = first_example;
  std::string error;
  const Backend* backend = FindBackend(c.backend, &error);
  INFO(error);
  REQUIRE(backend != nullptr);
  const Graph g = c.model.BuildGraph();
  std::unique_ptr<Runner> runner = backend->Prepare({g, c.dtype, c.mode}, opt);
  for (int i = 0; i < kSteps; ++i) runner->Step();
  return Updates(c, *runner);
}

using test::RelativeError;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Run by the test below in each of its rank processes (hidden: not run on
// its own): the case of PARADNN_TEST_CASE, trained through the world the
// environment describes, its updates written to PARADNN_TEST_OUT.
TEST_CASE(kRankTest, "[.rank]") {
  const World world = WorldFromEnvironment();
  REQUIRE(world.size == 2);
  const Case c = ParseCaseName(std::getenv("PARADNN_TEST_CASE"));
  std::unique_ptr<Communicator> comm = Connect(world, 60);
  const std::vector<float> updates =
      Train(c, comm.get(), world.rank * c.model.BuildGraph().batch());
  std::ofstream out(std::getenv("PARADNN_TEST_OUT"), std::ios::binary);
  out.write(reinterpret_cast<const char*>(updates.data()),
            updates.size() * sizeof(float));
}

// Starts this test binary as rank `rank` of 2; returns its pid.
pid_t StartRank(int rank, int port, const std::string& name,
                const std::string& out) {
  std::vector<std::string> env = {
      "RANK=" + std::to_string(rank), "WORLD_SIZE=2",
      "MASTER_ADDR=127.0.0.1",        "MASTER_PORT=" + std::to_string(port),
      "PARADNN_TEST_CASE=" + name,    "PARADNN_TEST_OUT=" + out};
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", test = kRankTest;
  char* argv[] = {exe.data(), test.data(), nullptr};
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO,
                                   (out + ".log").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int error =
      posix_spawn(&pid, exe.c_str(), &files, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&files);
  REQUIRE(error == 0);
  return pid;
}

// The rank's exit status, or -1 after two minutes (then it is killed).
int Wait(pid_t pid) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::minutes(2);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<float> ReadFloats(const std::string& path) {
  const std::string bytes = Slurp(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

TEST_CASE("two ranks averaging gradients step as one rank on both batches",
          "[distributed]") {
  const std::string backend = GENERATE("torch", "onednn");
  const std::string model =
      GENERATE(from_range(std::begin(kModels), std::end(kModels)));
  const std::string suffix = "/" + backend + "/fp32/train";
  const std::string half = model + std::to_string(kBatch) + suffix;
  const std::string whole = model + std::to_string(2 * kBatch) + suffix;
  INFO(half);
  const int port = test::FreePort();
  const std::string out0 = Scratch("rank0.bin"), out1 = Scratch("rank1.bin");
  const pid_t r0 = StartRank(0, port, half, out0);
  const pid_t r1 = StartRank(1, port, half, out1);
  const int s0 = Wait(r0), s1 = Wait(r1);
  INFO("rank 0:\n"
       << Slurp(out0 + ".log") << "\nrank 1:\n"
       << Slurp(out1 + ".log"));
  REQUIRE(s0 == 0);
  REQUIRE(s1 == 0);
  const std::vector<float> u0 = ReadFloats(out0), u1 = ReadFloats(out1);
  // The averaged gradients are the same bits on both ranks.
  REQUIRE(!u0.empty());
  CHECK(u0 == u1);
  // One rank on the concatenated batch: the same updates, to fp32 rounding
  // (sums over the examples in another order).
  const std::vector<float> one = Train(ParseCaseName(whole), nullptr, 0);
  CHECK(RelativeError(u0, one) < 1e-4);
  // Not by accident: one rank on its half alone updates differently.
  const std::vector<float> alone = Train(ParseCaseName(half), nullptr, 0);
  CHECK(RelativeError(alone, one) > 1e-2);
}

TEST_CASE("the world is read from each launcher's environment",
          "[distributed]") {
  SECTION("alone") { CHECK(WorldFromEnvironment().size == 1); }
  SECTION("torchrun's variables") {
    Env rank("RANK", "1"), size("WORLD_SIZE", "4"), local("LOCAL_RANK", "1");
    Env addr("MASTER_ADDR", "10.0.0.7"), port("MASTER_PORT", "23456");
    const World w = WorldFromEnvironment();
    CHECK(w.rank == 1);
    CHECK(w.size == 4);
    CHECK(w.local_rank == 1);
    CHECK(w.addr == "10.0.0.7");
    CHECK(w.port == 23456);
    CHECK(w.launcher == "env");
  }
  SECTION("a Slurm step") {
    Env id("SLURM_PROCID", "3"), n("SLURM_STEP_NUM_TASKS", "4");
    Env local("SLURM_LOCALID", "1"), job("SLURM_JOB_ID", "77");
    Env nodes("SLURM_STEP_NODELIST", "gpu[07-08],cpu1");
    const World w = WorldFromEnvironment();
    CHECK(w.rank == 3);
    CHECK(w.size == 4);
    CHECK(w.local_rank == 1);
    CHECK(w.addr == "gpu07");
    CHECK(w.launcher == "slurm");
    CHECK((w.port >= 20000 && w.port < 40000));
  }
  SECTION("Open MPI on one node") {
    Env rank("OMPI_COMM_WORLD_RANK", "1"), size("OMPI_COMM_WORLD_SIZE", "2");
    Env local("OMPI_COMM_WORLD_LOCAL_RANK", "1");
    Env local_size("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
    const World w = WorldFromEnvironment();
    CHECK(w.rank == 1);
    CHECK(w.size == 2);
    CHECK(w.addr == "127.0.0.1");
    CHECK(w.launcher == "mpi");
  }
  SECTION("Open MPI over nodes needs MASTER_ADDR") {
    Env rank("OMPI_COMM_WORLD_RANK", "0"), size("OMPI_COMM_WORLD_SIZE", "4");
    Env local_size("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
    CHECK_THROWS_WITH(WorldFromEnvironment(),
                      Catch::Matchers::ContainsSubstring("set MASTER_ADDR"));
  }
  SECTION("bad values name the variable") {
    Env rank("RANK", "2"), size("WORLD_SIZE", "2");
    CHECK_THROWS_WITH(
        WorldFromEnvironment(),
        Catch::Matchers::ContainsSubstring("rank 2 of a world of 2"));
    Env bad("WORLD_SIZE", "two");
    CHECK_THROWS_WITH(WorldFromEnvironment(),
                      Catch::Matchers::ContainsSubstring(
                          "WORLD_SIZE='two': expected an integer"));
  }
  SECTION("half of torchrun's variables") {
    Env rank("RANK", "0");
    CHECK_THROWS_WITH(WorldFromEnvironment(),
                      Catch::Matchers::ContainsSubstring(
                          "RANK is set but WORLD_SIZE is not"));
  }
}

TEST_CASE("Slurm host lists give their first host", "[distributed]") {
  CHECK(FirstSlurmHost("node1") == "node1");
  CHECK(FirstSlurmHost("node1,node2") == "node1");
  CHECK(FirstSlurmHost("n[003-005,9]") == "n003");
  CHECK(FirstSlurmHost("n[7],m[1-2]") == "n7");
  CHECK(FirstSlurmHost("a,b[1-2]") == "a");
}

}  // namespace
}  // namespace paradnn
