// Data-parallel runs: this process's rank among the processes a launcher
// started (torchrun's variables, a Slurm step, Open MPI's mpirun), and the
// communicator that averages their gradients.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "generators/graph.h"

namespace paradnn {

struct World {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  std::string addr;  // where rank 0 serves the rendezvous
  int port = 0;
  std::string launcher;  // "env" (torchrun's variables), "slurm", "mpi"
};

// The world the environment describes: RANK and WORLD_SIZE (with
// MASTER_ADDR and MASTER_PORT) first, then a Slurm step's SLURM_PROCID and
// SLURM_STEP_NUM_TASKS, then Open MPI's OMPI_COMM_WORLD_*; a world of one
// when none is set. Throws std::invalid_argument naming the variable, its
// value and what was expected.
World WorldFromEnvironment();

// FNV-1a: a hash of text that every rank computes alike, whatever machine
// or standard library it runs on (std::hash promises neither).
uint64_t StableHash(const std::string& text);

// The first host of a Slurm host list: "node[03-05,9],gpu1" -> "node03".
std::string FirstSlurmHost(const std::string& nodelist);

// A contiguous buffer of gradients, in the runner's layout.
struct GradBuffer {
  void* data = nullptr;
  int64_t elements = 0;
  DType dtype = DType::kFp32;
  bool cuda = false;  // in the memory of CUDA device 0
};

// The collectives a data-parallel step needs, over all ranks of a world.
// Every call is collective: each rank makes the same calls in the same
// order. Every call that waits on a peer gives up after the timeout and
// throws std::runtime_error saying which operation and why.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual const World& world() const = 0;
  // Sums each buffer over the ranks and divides by the number of ranks, in
  // place: gradients averaged. Buffers are packed into buckets of a few MB,
  // one all-reduce per bucket.
  virtual void AverageGradients(const std::vector<GradBuffer>& buffers) = 0;
  // The maximum over the ranks of each value, for agreeing on what to run.
  virtual std::vector<int64_t> Max(const std::vector<int64_t>& values) = 0;
  // Measured since it was made: seconds inside AverageGradients and the
  // bytes of gradient it averaged (per rank).
  virtual double gradient_seconds() const = 0;
  virtual int64_t gradient_bytes() const = 0;
  // The library, transport and rendezvous, for the run's context.
  virtual std::string Describe() const = 0;
};

// Joins the world's other ranks (rank 0 serves the rendezvous) through the
// communicator module; `timeout_s` bounds the rendezvous and every
// collective. Throws std::runtime_error when it cannot.
std::unique_ptr<Communicator> Connect(const World& world, double timeout_s);

// A communicator module is a shared object libparadnn_comm_<name>.so that
// exports this function; it returns nullptr and sets *error when the world
// cannot be joined.
using CommunicatorModuleEntry = Communicator* (*)(const World& world,
                                                  double timeout_s,
                                                  std::string* error);
constexpr char kCommunicatorModuleSymbol[] = "paradnn_communicator_v1";

}  // namespace paradnn
