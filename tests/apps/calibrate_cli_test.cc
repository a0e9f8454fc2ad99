// `tensorwire calibrate`'s flags: each bad one is refused with exit 2 and a
// message naming the flag and what is wrong, before anything runs (no RDMA
// device is needed for these).
#include <gtest/gtest.h>

#include "tests/apps/cli_fixture.h"

namespace tensorwire::testing {
namespace {

class CalibrateCli : public CliFixture {};

TEST_F(CalibrateCli, WithoutBackendIsBadInputNamingTheFlag) {
  CliRun r = run("calibrate --device rxe0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--backend")) << r.err;
}

TEST_F(CalibrateCli, TheSimulatorAsBackendIsRefusedSayingOnlyVerbsIsCalibrated) {
  CliRun r = run("calibrate --backend sim");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--backend")) << r.err;
  EXPECT_TRUE(contains(r.err, "only 'verbs'")) << r.err;
}

TEST_F(CalibrateCli, SizesNotIncreasingAreRefusedNamingTheSize) {
  CliRun r = run("calibrate --backend verbs --sizes 1KiB,64KiB,16KiB");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--sizes: '16KiB'")) << r.err;
  EXPECT_TRUE(contains(r.err, "strictly increasing")) << r.err;
}

TEST_F(CalibrateCli, TooFewSizesAreRefusedSayingHowManyAreNeeded) {
  CliRun r = run("calibrate --backend verbs --sizes 1KiB,1MiB");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "at least 3 sizes")) << r.err;
}

TEST_F(CalibrateCli, ASizeThatIsNotOneIsRefusedNamingIt) {
  CliRun r = run("calibrate --backend verbs --sizes 1KiB,lots,1MiB");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--sizes: 'lots'")) << r.err;
}

TEST_F(CalibrateCli, TooFewStepsAreRefusedNamingTheFlag) {
  CliRun r = run("calibrate --backend verbs --steps 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--steps must be a whole number from 3")) << r.err;
}

TEST_F(CalibrateCli, ZeroRoundsAreRefusedNamingTheFlag) {
  CliRun r = run("calibrate --backend verbs --rounds 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--rounds must be a whole number from 1 to 100")) << r.err;
}

TEST_F(CalibrateCli, AnEmptyOutputPathIsRefusedNamingTheFlag) {
  CliRun r = run("calibrate --backend verbs --out ''");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--out")) << r.err;
}

}  // namespace
}  // namespace tensorwire::testing
