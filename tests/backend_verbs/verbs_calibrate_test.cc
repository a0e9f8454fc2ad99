// `tensorwire calibrate --backend verbs` on the real device, kept short (three
// sizes, three steps, one round; sizes far apart, so that the VM's noise
// cannot make the largest look no slower than the smallest): it writes a profile whose fitted [cluster] values are
// positive and finite, and that a scenario includes through the loader.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scenario/scenario_loader.h"
#include "tests/backend_verbs/verbs_cluster.h"

namespace tensorwire {
namespace {

namespace fs = std::filesystem;

std::string run_cli(const std::string& args, int* exit_code) {
  const std::string command = std::string(TENSORWIRE_CLI_PATH) + " " + args + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return output;
}

TEST(VerbsCalibrate, AShortCalibrationWritesAProfileOfPositiveFiniteValuesTheLoaderAccepts) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  std::string pattern = (fs::temp_directory_path() / "tw_calibrate_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path dir(pattern);
  const std::string device = std::getenv("TENSORWIRE_RDMA_DEVICE");
  int code = -1;
  const std::string output =
      run_cli("calibrate --backend verbs --device " + device + " --sizes 1KiB,64KiB,1MiB " +
                  "--steps 3 --rounds 1 --out " + (dir / "fitted.toml").string(),
              &code);
  ASSERT_EQ(code, 0) << output;
  EXPECT_NE(output.find("calibrate: wrote"), std::string::npos) << output;
  std::ifstream in(dir / "fitted.toml");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("step_ns(bytes) = fixed_ns + bytes / bandwidth"), std::string::npos)
      << text.str();
  std::ofstream(dir / "s.toml") << "name = \"s\"\ninclude = \"fitted.toml\"\n"
                                   "[workload]\nkind = \"tensors\"\nsteps = 1\n"
                                   "[[workload.tensor]]\nname = \"a\"\nsrc = 0\ndst = 1\n"
                                   "dtype = \"uint8\"\nbytes = 16\n";
  const Scenario s = load_scenario_file((dir / "s.toml").string());
  EXPECT_GT(s.cluster.nic_latency_ns, 0);
  EXPECT_TRUE(std::isfinite(s.cluster.nic_bandwidth_bytes_per_s));
  EXPECT_GT(s.cluster.nic_bandwidth_bytes_per_s, 0);
  EXPECT_TRUE(std::isfinite(s.cluster.host_memcpy_bandwidth_bytes_per_s));
  EXPECT_GT(s.cluster.host_memcpy_bandwidth_bytes_per_s, 0);
  EXPECT_GE(s.cluster.registration_base_ns, 0);
  EXPECT_GE(s.cluster.registration_per_page_ns, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensorwire
