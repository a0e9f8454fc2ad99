// apps/tensorwire/output_file: the CLI's atomic writer. The target holds
// either its old bytes or all of the new ones, never part of them.
#include "apps/tensorwire/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace tensorwire::app {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tensorwire_output_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_ / "locked", fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  // How many names the test directory holds.
  size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }

  fs::path dir_;
};

TEST_F(OutputFileTest, WritesTheBytesAndLeavesNoTemporaryFile) {
  const fs::path target = dir_ / "out.json";
  ASSERT_TRUE(write_file_atomically(target.string(), "new bytes", "--json").is_ok());
  EXPECT_EQ(contents(target), "new bytes");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFileTest, NothingAppearsAtTheTargetBeforeTheWrite) {
  const fs::path target = dir_ / "out.json";
  std::ofstream(target) << "old";
  Result<OutputFile> file = OutputFile::open(target.string(), "--json");
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  EXPECT_EQ(contents(target), "old");
  EXPECT_TRUE(fs::exists(file->temporary_path()));
  EXPECT_EQ(fs::path(file->temporary_path()).parent_path(), dir_);
  ASSERT_TRUE(file->write_and_close("new").is_ok());
  EXPECT_EQ(contents(target), "new");
  EXPECT_FALSE(fs::exists(file->temporary_path()));
}

TEST_F(OutputFileTest, AFileNeverWrittenLeavesTheTargetAloneAndRemovesItsTemporary) {
  const fs::path target = dir_ / "out.json";
  std::ofstream(target) << "old";
  std::string temporary;
  {
    Result<OutputFile> file = OutputFile::open(target.string(), "--json");
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    temporary = file->temporary_path();
  }
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_EQ(contents(target), "old");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFileTest, CreatesMissingParentDirectories) {
  const fs::path target = dir_ / "a" / "b" / "out.dot";
  ASSERT_TRUE(write_file_atomically(target.string(), "graph", "--dot").is_ok());
  EXPECT_EQ(contents(target), "graph");
}

TEST_F(OutputFileTest, AParentThatIsARegularFileIsAnErrorNamingIt) {
  std::ofstream(dir_ / "plain") << "x";
  const fs::path target = dir_ / "plain" / "sub" / "out.json";
  const Status st = write_file_atomically(target.string(), "bytes", "--json");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find((dir_ / "plain").string() + "' is not a directory"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("--json"), std::string::npos) << st.message();
}

TEST_F(OutputFileTest, ATargetThatIsADirectoryIsAnError) {
  fs::create_directory(dir_ / "d");
  const Status st = write_file_atomically((dir_ / "d").string(), "bytes", "--trace");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("--trace"), std::string::npos) << st.message();
  EXPECT_TRUE(fs::is_directory(dir_ / "d"));
}

// Root ignores directory permissions, so this case only means something for
// other users.
TEST_F(OutputFileTest, AnUnwritableDirectoryFailsAndKeepsTheOldContent) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores permissions";
  const fs::path locked = dir_ / "locked";
  fs::create_directory(locked);
  const fs::path target = locked / "out.json";
  std::ofstream(target) << "old content";
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  const Status st = write_file_atomically(target.string(), "new content", "--json");
  fs::permissions(locked, fs::perms::owner_all);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find(target.string()), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("Permission denied"), std::string::npos) << st.message();
  EXPECT_EQ(contents(target), "old content");
  EXPECT_EQ(static_cast<size_t>(std::distance(fs::directory_iterator(locked), {})), 1u);
}

TEST_F(OutputFileTest, SameFilePathSeesThroughSpellingsAndLinks) {
  const fs::path a = dir_ / "a.toml";
  std::ofstream(a) << "x";
  EXPECT_TRUE(same_file_path(a.string(), (dir_ / "." / "a.toml").string()));
  fs::create_hard_link(a, dir_ / "hard.toml");
  EXPECT_TRUE(same_file_path(a.string(), (dir_ / "hard.toml").string()));
  fs::create_symlink(a, dir_ / "soft.toml");
  EXPECT_TRUE(same_file_path((dir_ / "soft.toml").string(), a.string()));
  EXPECT_FALSE(same_file_path(a.string(), (dir_ / "b.toml").string()));
  EXPECT_TRUE(same_file_path((dir_ / "new.json").string(), (dir_ / "x" / ".." / "new.json").string()));
}

TEST_F(OutputFileTest, RefusesAnOutputThatIsTheInput) {
  const fs::path a = dir_ / "a.toml";
  std::ofstream(a) << "x";
  const Status st = refuse_overwriting_input((dir_ / "./a.toml").string(), "--json", a.string(),
                                             "scenario file");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.message(), "--json would overwrite the scenario file '" + a.string() + "'");
  EXPECT_TRUE(refuse_overwriting_input((dir_ / "b").string(), "--json", a.string(), "scenario file")
                  .is_ok());
  EXPECT_TRUE(refuse_overwriting_input("", "--json", a.string(), "scenario file").is_ok());
}

}  // namespace
}  // namespace tensorwire::app
