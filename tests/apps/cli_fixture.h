// Running the built `tensorwire` binary as a user would, from a test: a fresh
// temporary folder per test, and the exit code, stdout and stderr of a command.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tensorwire::testing {

namespace fs = std::filesystem;


inline const std::string kCli = TENSORWIRE_CLI_PATH;
inline const std::string kQuickstart = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/quickstart.toml";

inline std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class CliFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tensorwire_cli_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path path(const std::string& name) const { return dir_ / name; }

  // `args` is shell text; quote paths with quoted(). stdout and stderr are
  // files, so stderr is never a terminal and no progress bar is drawn.
  // With `cwd`, the command runs there.
  CliRun run(const std::string& args, const fs::path& cwd = {}) const {
    const fs::path out = path("stdout.txt");
    const fs::path err = path("stderr.txt");
    const std::string cd = cwd.empty() ? "" : "cd " + quoted(cwd.string()) + " && ";
    const std::string command = cd + quoted(kCli) + " " + args + " >" + quoted(out.string()) +
                                " 2>" + quoted(err.string()) + " </dev/null";
    const int status = std::system(command.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
  }

  fs::path dir_;
};

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace tensorwire::testing
