#include "launch/rank_placement.h"

#include <charconv>
#include <string_view>

namespace tensorwire::launch {
namespace {

Status bad(const std::string& what) { return {StatusCode::kInvalidArgument, what}; }

// A decimal number, digits only (no sign, no spaces, no trailing text).
Result<uint64_t> parse_count(const char* name, const char* text) {
  const std::string_view s(text);
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return bad(std::string(name) + "='" + std::string(s) + "' is not a decimal number");
  }
  return value;
}

Result<RankPlacement> checked(uint64_t rank, uint64_t world, const std::string& rank_name,
                              const std::string& world_name, std::string source) {
  if (world == 0 || world > kMaxWorld) {
    return bad(world_name + "=" + std::to_string(world) + " is not a world size (1 to " +
               std::to_string(kMaxWorld) + ")");
  }
  if (rank >= world) {
    return bad(rank_name + "=" + std::to_string(rank) + " is not below " + world_name + "=" +
               std::to_string(world));
  }
  return RankPlacement{static_cast<uint32_t>(rank), static_cast<uint32_t>(world), std::move(source)};
}

// One launcher's pair of variables: both, neither (nullopt), or an error.
std::optional<Result<RankPlacement>> from_pair(const EnvironmentLookup& lookup,
                                               const char* rank_name, const char* world_name,
                                               const char* launcher) {
  const char* rank_text = lookup(rank_name);
  const char* world_text = lookup(world_name);
  if (rank_text == nullptr && world_text == nullptr) return std::nullopt;
  if (rank_text == nullptr || world_text == nullptr) {
    return Result<RankPlacement>(bad(std::string(rank_text == nullptr ? world_name : rank_name) +
                                     " is set but " + (rank_text == nullptr ? rank_name : world_name) +
                                     " is not"));
  }
  Result<uint64_t> rank = parse_count(rank_name, rank_text);
  if (!rank) return Result<RankPlacement>(rank.status());
  Result<uint64_t> world = parse_count(world_name, world_text);
  if (!world) return Result<RankPlacement>(world.status());
  return checked(*rank, *world, rank_name, world_name,
                 std::string(launcher) + " (" + rank_name + ", " + world_name + ")");
}

}  // namespace

Result<RankPlacement> rank_placement(std::optional<uint64_t> flag_rank,
                                     std::optional<uint64_t> flag_world,
                                     const EnvironmentLookup& lookup) {
  if (flag_rank.has_value() != flag_world.has_value()) {
    return bad(flag_rank ? "--rank is given but --world is not" : "--world is given but --rank is not");
  }
  if (flag_rank) return checked(*flag_rank, *flag_world, "--rank", "--world", "--rank/--world");
  if (auto mpi = from_pair(lookup, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI")) {
    return std::move(*mpi);
  }
  if (auto slurm = from_pair(lookup, "SLURM_PROCID", "SLURM_NTASKS", "Slurm")) {
    return std::move(*slurm);
  }
  return bad("no rank given: pass --rank and --world, or launch with srun (SLURM_PROCID, "
             "SLURM_NTASKS) or Open MPI's mpirun (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)");
}

}  // namespace tensorwire::launch
