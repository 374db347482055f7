// The world from the launcher's environment, and joining it through the
// communicator module (which links LibTorch's c10d: the core does not).
#include "distributed/world.h"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>

#include "modules/loader.h"

namespace paradnn {
namespace {

const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = Env(name);
  return value != nullptr ? value : fallback;
}

// The integer in `name`, at least `min`; `fallback` when unset.
int EnvInt(const char* name, int min, int fallback) {
  const char* value = Env(name);
  if (value == nullptr) return fallback;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (*end != '\0' || n < min || n > (1 << 30)) {
    throw std::invalid_argument(std::string(name) + "='" + value +
                                "': expected an integer of at least " +
                                std::to_string(min));
  }
  return static_cast<int>(n);
}

// A port for the rendezvous when the launcher names none: the same on
// every rank of a job (a function of its id), and different between jobs
// that share a node.
int PortOf(const std::string& job) {
  return 20000 + static_cast<int>(StableHash(job) % 20000);
}

}  // namespace

uint64_t StableHash(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string FirstSlurmHost(const std::string& nodelist) {
  const size_t bracket = nodelist.find('[');
  const size_t comma = nodelist.find(',');
  if (bracket == std::string::npos || comma < bracket) {
    return nodelist.substr(0, comma);
  }
  const size_t end = nodelist.find_first_of("-,]", bracket + 1);
  return nodelist.substr(0, bracket) +
         nodelist.substr(bracket + 1, end - bracket - 1);
}

World WorldFromEnvironment() {
  World w;
  if (Env("RANK") != nullptr || Env("WORLD_SIZE") != nullptr) {
    // torchrun's variables, or set by hand.
    if (Env("RANK") == nullptr || Env("WORLD_SIZE") == nullptr) {
      throw std::invalid_argument(
          std::string(Env("RANK") ? "RANK" : "WORLD_SIZE") + " is set but " +
          (Env("RANK") ? "WORLD_SIZE" : "RANK") +
          " is not: a data-parallel run needs both");
    }
    w.launcher = "env";
    w.size = EnvInt("WORLD_SIZE", 1, 1);
    w.rank = EnvInt("RANK", 0, 0);
    w.local_rank = EnvInt("LOCAL_RANK", 0, w.rank);
    w.addr = EnvOr("MASTER_ADDR", "127.0.0.1");
    w.port = EnvInt("MASTER_PORT", 1, 29500);
  } else if (Env("SLURM_STEP_NUM_TASKS") != nullptr &&
             Env("SLURM_PROCID") != nullptr) {
    // A task of an srun step; the batch script itself is no step of tasks.
    w.launcher = "slurm";
    w.size = EnvInt("SLURM_STEP_NUM_TASKS", 1, 1);
    w.rank = EnvInt("SLURM_PROCID", 0, 0);
    w.local_rank = EnvInt("SLURM_LOCALID", 0, 0);
    w.addr = EnvOr("MASTER_ADDR",
                   FirstSlurmHost(EnvOr("SLURM_STEP_NODELIST", "127.0.0.1")));
    w.port = EnvInt(
        "MASTER_PORT", 1,
        PortOf(EnvOr("SLURM_JOB_ID", "") + "." + EnvOr("SLURM_STEP_ID", "")));
  } else if (Env("OMPI_COMM_WORLD_SIZE") != nullptr) {
    w.launcher = "mpi";
    w.size = EnvInt("OMPI_COMM_WORLD_SIZE", 1, 1);
    w.rank = EnvInt("OMPI_COMM_WORLD_RANK", 0, 0);
    w.local_rank = EnvInt("OMPI_COMM_WORLD_LOCAL_RANK", 0, 0);
    w.addr = EnvOr("MASTER_ADDR", "");
    if (w.addr.empty()) {
      if (EnvInt("OMPI_COMM_WORLD_LOCAL_SIZE", 1, 0) != w.size) {
        throw std::invalid_argument(
            "Open MPI started ranks on several nodes: set MASTER_ADDR to "
            "rank 0's host (mpirun -x MASTER_ADDR=host)");
      }
      w.addr = "127.0.0.1";  // every rank on this node
    }
    w.port = EnvInt(
        "MASTER_PORT", 1,
        PortOf(EnvOr("OMPI_MCA_ess_base_jobid", EnvOr("PMIX_NAMESPACE", ""))));
  }
  if (w.rank >= w.size) {
    throw std::invalid_argument(
        "rank " + std::to_string(w.rank) + " of a world of " +
        std::to_string(w.size) + " (" + w.launcher +
        " launcher): expected a rank below the world size");
  }
  if (w.port > 65535) {
    throw std::invalid_argument("MASTER_PORT=" + std::to_string(w.port) +
                                ": expected a port below 65536");
  }
  return w;
}

std::unique_ptr<Communicator> Connect(const World& world, double timeout_s) {
  std::string error;
  void* module = OpenModule("libparadnn_comm_c10d.so", &error);
  if (module == nullptr) throw std::runtime_error(error);
  auto* make = reinterpret_cast<CommunicatorModuleEntry>(
      dlsym(module, kCommunicatorModuleSymbol));
  if (make == nullptr) {
    throw std::runtime_error(std::string("libparadnn_comm_c10d.so has no ") +
                             kCommunicatorModuleSymbol);
  }
  std::unique_ptr<Communicator> comm(make(world, timeout_s, &error));
  if (comm == nullptr) throw std::runtime_error(error);
  return comm;
}

}  // namespace paradnn
