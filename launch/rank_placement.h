// Which rank this process is, and how many there are: from `--rank`/`--world`
// when given, otherwise from the launcher's environment, so that one command
// line works under `srun` (SLURM_PROCID, SLURM_NTASKS) and `mpirun` from Open
// MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE). Open MPI's variables win
// over Slurm's: `mpirun` inside a Slurm allocation sees both, and Slurm's then
// describe the allocation, not this job's ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/status.h"

namespace tensorwire::launch {

struct RankPlacement {
  uint32_t rank = 0;
  uint32_t world = 0;
  std::string source;  // "--rank/--world", "Open MPI (OMPI_COMM_WORLD_RANK, ...)", ...
};

// Reads an environment variable; null when unset. Tests pass their own.
using EnvironmentLookup = std::function<const char*(const char* name)>;

// The largest world accepted: more ranks than any cluster this runs on, and
// small enough that rank arithmetic never overflows.
inline constexpr uint32_t kMaxWorld = 1u << 20;

// Errors (kInvalidArgument) name the flag or variable and the value: a rank
// without a world or the other way round, a value that is not a decimal
// number, a world of 0 or above kMaxWorld, a rank not below the world.
Result<RankPlacement> rank_placement(std::optional<uint64_t> flag_rank,
                                     std::optional<uint64_t> flag_world,
                                     const EnvironmentLookup& lookup);

}  // namespace tensorwire::launch
