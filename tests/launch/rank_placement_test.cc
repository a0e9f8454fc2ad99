// Where a process learns its rank: flags first, then Open MPI's environment,
// then Slurm's, each pair complete and consistent or a clear error naming it.
#include "launch/rank_placement.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tensorwire::launch {
namespace {

EnvironmentLookup environment(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

const EnvironmentLookup kEmpty = environment({});

TEST(RankPlacement, FlagsWinOverEveryEnvironment) {
  auto p = rank_placement(2, 4, environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"},
                                             {"OMPI_COMM_WORLD_RANK", "1"},
                                             {"OMPI_COMM_WORLD_SIZE", "2"}}));
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_EQ(p->rank, 2u);
  EXPECT_EQ(p->world, 4u);
  EXPECT_EQ(p->source, "--rank/--world");
}

TEST(RankPlacement, SlurmAloneIsRead) {
  auto p = rank_placement(std::nullopt, std::nullopt,
                          environment({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}));
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_EQ(p->rank, 3u);
  EXPECT_EQ(p->world, 4u);
  EXPECT_EQ(p->source, "Slurm (SLURM_PROCID, SLURM_NTASKS)");
}

TEST(RankPlacement, OpenMpiWinsOverTheSlurmAllocationAroundIt) {
  auto p = rank_placement(std::nullopt, std::nullopt,
                          environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"},
                                       {"OMPI_COMM_WORLD_RANK", "5"},
                                       {"OMPI_COMM_WORLD_SIZE", "6"}}));
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_EQ(p->rank, 5u);
  EXPECT_EQ(p->world, 6u);
  EXPECT_EQ(p->source, "Open MPI (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)");
}

void expect_error(const Result<RankPlacement>& p, const std::string& text) {
  ASSERT_FALSE(p) << "accepted rank " << p->rank << " of " << p->world;
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find(text), std::string::npos) << p.status().message();
}

TEST(RankPlacement, NothingAtAllSaysHowToGiveIt) {
  expect_error(rank_placement(std::nullopt, std::nullopt, kEmpty), "pass --rank and --world");
}

TEST(RankPlacement, HalfAPairIsAnErrorNamingTheMissingHalf) {
  expect_error(rank_placement(1, std::nullopt, kEmpty), "--rank is given but --world is not");
  expect_error(rank_placement(std::nullopt, 3, kEmpty), "--world is given but --rank is not");
  expect_error(rank_placement(std::nullopt, std::nullopt, environment({{"SLURM_PROCID", "1"}})),
               "SLURM_PROCID is set but SLURM_NTASKS is not");
  expect_error(rank_placement(std::nullopt, std::nullopt,
                              environment({{"OMPI_COMM_WORLD_SIZE", "2"}})),
               "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not");
}

TEST(RankPlacement, ValuesThatAreNotDecimalNumbersAreNamed) {
  for (const char* text : {"", "-1", "+1", " 1", "1 ", "0x2", "two", "1.0",
                           "99999999999999999999999"}) {
    expect_error(rank_placement(std::nullopt, std::nullopt,
                                environment({{"SLURM_PROCID", text}, {"SLURM_NTASKS", "4"}})),
                 "SLURM_PROCID='" + std::string(text) + "' is not a decimal number");
  }
}

TEST(RankPlacement, RankMustBeBelowAWorldOfSensibleSize) {
  expect_error(rank_placement(4, 4, kEmpty), "--rank=4 is not below --world=4");
  expect_error(rank_placement(0, 0, kEmpty), "--world=0 is not a world size");
  expect_error(rank_placement(0, uint64_t{kMaxWorld} + 1, kEmpty), "is not a world size");
  expect_error(rank_placement(std::nullopt, std::nullopt,
                              environment({{"OMPI_COMM_WORLD_RANK", "7"},
                                           {"OMPI_COMM_WORLD_SIZE", "7"}})),
               "OMPI_COMM_WORLD_RANK=7 is not below OMPI_COMM_WORLD_SIZE=7");
  auto last = rank_placement(kMaxWorld - 1, kMaxWorld, kEmpty);
  ASSERT_TRUE(last) << last.status().to_string();
  EXPECT_EQ(last->rank, kMaxWorld - 1);
}

}  // namespace
}  // namespace tensorwire::launch
