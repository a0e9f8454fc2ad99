// The layering rules of docs/ARCHITECTURE.md, checked against the source tree:
// dependencies point down only, and the deterministic layers (core/, model/)
// take no time, randomness or threads from the OS. Also the assertion density
// of core/ and backend_sim/ (below).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = TENSORWIRE_SOURCE_ROOT;

std::vector<fs::path> sources_under(const std::string& dir) {
  std::vector<fs::path> files;
  fs::path base = kRoot / dir;
  if (!fs::exists(base)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(base)) {
    auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".h" || ext == ".cc" || ext == ".cpp")) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Drops // and /* */ comments, so a comment that mentions std::thread is not a
// violation. String literals are kept: core/ has no reason to spell those
// names in a string either.
std::string strip_comments(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
      out += '\n';
    } else if (text.compare(i, 2, "/*") == 0) {
      size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? text.size() : end + 1;
    } else {
      out += text[i];
    }
  }
  return out;
}

struct Violation {
  fs::path file;
  std::string what;
};

std::vector<Violation> find(const std::string& dir, const std::vector<std::string>& patterns) {
  std::vector<Violation> found;
  for (const auto& file : sources_under(dir)) {
    std::string code = strip_comments(read_file(file));
    for (const auto& pattern : patterns) {
      if (std::regex_search(code, std::regex(pattern))) {
        found.push_back({fs::relative(file, kRoot), pattern});
      }
    }
  }
  return found;
}

std::string describe(const std::vector<Violation>& v) {
  std::string s;
  for (const auto& x : v) s += "  " + x.file.string() + " matches /" + x.what + "/\n";
  return s;
}

const std::vector<std::string> kNondeterminism = {
    R"(steady_clock|system_clock|high_resolution_clock)",
    R"(\bs?rand\s*\()",
    R"(random_device)",
    R"(std::thread|std::jthread|#include\s*<thread>)",
    R"(std::async|#include\s*<future>|pthread_|#include\s*<pthread\.h>)",
    R"(std::mutex|#include\s*<mutex>|std::atomic|#include\s*<atomic>)",
    R"(#include\s*<random>|std::mt19937|default_random_engine)",
    R"(\bclock\s*\(\s*\)|#include\s*<ctime>|#include\s*<time\.h>)",
    R"(\bsleep\s*\(|usleep|nanosleep|sleep_for|sleep_until)",
    R"(\btime\s*\(\s*(NULL|nullptr|0)?\s*\))",
    R"(gettimeofday|clock_gettime)",
};

TEST(Layering, CoreUsesNoOsClockRandomnessOrThreads) {
  auto v = find("core", kNondeterminism);
  EXPECT_TRUE(v.empty()) << "core/ must take time and randomness from RankEnv:\n" << describe(v);
}

TEST(Layering, ModelUsesNoOsClockRandomnessOrThreads) {
  auto v = find("model", kNondeterminism);
  EXPECT_TRUE(v.empty()) << "model/ must be deterministic:\n" << describe(v);
}

TEST(Layering, SimulatorUsesNoOsClockRandomnessOrThreads) {
  auto v = find("backend_sim", kNondeterminism);
  EXPECT_TRUE(v.empty()) << "backend_sim/ must be deterministic:\n" << describe(v);
}

TEST(Layering, CoreIncludesNothingAboveIt) {
  auto v = find("core", {R"(#include\s*"(backend_sim|backend_verbs|launch|model|scenario|runner|report|apps)/)"});
  EXPECT_TRUE(v.empty()) << "core/ knows no backend and no layer above it:\n" << describe(v);
}

TEST(Layering, SimulatorIncludesOnlyCore) {
  auto v = find("backend_sim", {R"(#include\s*"(backend_verbs|launch|model|scenario|runner|report|apps)/)"});
  EXPECT_TRUE(v.empty()) << "backend_sim/ depends on core/ only:\n" << describe(v);
}

TEST(Layering, VerbsBackendIncludesOnlyCoreAndLaunch) {
  auto v = find("backend_verbs", {R"(#include\s*"(backend_sim|model|scenario|runner|report|apps)/)"});
  EXPECT_TRUE(v.empty()) << "backend_verbs/ depends on core/ and launch/ only:\n" << describe(v);
}

// launch/ is how separate processes find each other: sockets and frames, no
// RDMA and no simulator, so that it builds and is tested everywhere.
TEST(Layering, LaunchIncludesOnlyCore) {
  auto v = find("launch", {R"(#include\s*"(backend_sim|backend_verbs|model|scenario|runner|report|apps)/)"});
  auto verbs = find("launch", {R"(#include\s*<(infiniband|rdma)/)"});
  v.insert(v.end(), verbs.begin(), verbs.end());
  EXPECT_TRUE(v.empty()) << "launch/ depends on core/ only:\n" << describe(v);
}

// A scenario describes the cluster in core/'s terms (core/cluster.h), so the
// loader knows no backend: the same file drives the simulator and verbs.
TEST(Layering, ScenarioIncludesOnlyCore) {
  auto v = find("scenario", {R"(#include\s*"(backend_sim|backend_verbs|model|runner|report|apps)/)"});
  EXPECT_TRUE(v.empty()) << "scenario/ depends on core/ only:\n" << describe(v);
}

// runner/ reaches the verbs backend only through its verbs runner, a library of
// its own built only where libibverbs is; the simulator's runs never link it.
TEST(Layering, RunnerReachesVerbsOnlyThroughTheVerbsRunner) {
  std::vector<Violation> v;
  for (const Violation& x : find("runner", {R"(#include\s*"backend_verbs/)"})) {
    const std::string name = x.file.filename().string();
    // Both are tensorwire_runner_verbs's: a collective's world on verbs beside the run.
    if (name.rfind("verbs_run.", 0) != 0 && name.rfind("verbs_collective_world.", 0) != 0) {
      v.push_back(x);
    }
  }
  EXPECT_TRUE(v.empty()) << "only runner/verbs_run.* and verbs_collective_world.* may include "
                            "backend_verbs/:\n"
                         << describe(v);
}

TEST(Layering, ModelAndReportKnowNoRealBackend) {
  auto v = find("model", {R"(#include\s*"backend_verbs/)"});
  auto r = find("report", {R"(#include\s*"(backend_verbs|apps)/)"});
  v.insert(v.end(), r.begin(), r.end());
  EXPECT_TRUE(v.empty()) << describe(v);
}

// The checker must itself catch a violation, or the tests above prove nothing.
// The protocol seam: above core/protocols/ a point-to-point protocol is a
// Rendezvous from the registry, never named. (Its folder, the registry and
// its own tests name it.)
const std::vector<std::string> kPointToPointProtocolNames = {
    R"(tf_verbs|RdmaRendezvous|TfVerbs|RdmaTensorRequest|RdmaTensorResponse)"};

TEST(Layering, NoPointToPointProtocolIsNamedOutsideItsFolderAndTheRegistry) {
  std::vector<Violation> v;
  for (const char* dir : {"apps", "runner", "report", "model", "scenario", "backend_sim",
                          "backend_verbs", "launch", "core/workload",
                          "core/protocols/realm_broadcast"}) {
    for (Violation& x : find(dir, kPointToPointProtocolNames)) v.push_back(std::move(x));
  }
  // core/'s own files (the seam itself) name none either.
  for (const auto& file : sources_under("core")) {
    if (file.parent_path() != kRoot / "core") continue;
    if (std::regex_search(strip_comments(read_file(file)),
                          std::regex(kPointToPointProtocolNames[0]))) {
      v.push_back({fs::relative(file, kRoot), kPointToPointProtocolNames[0]});
    }
  }
  EXPECT_TRUE(v.empty()) << "only core/protocols/ and the registry name a protocol:\n"
                         << describe(v);
}

// The same for the collective protocol (Realm's broadcast): above
// core/protocols/ it is a CollectiveProtocol from the registry
// (core/collective.h), which reads its own [workload] table, runs in the
// backend's world and renders its own account. Only its folder, the registry
// and its own tests name its types.
const std::string kCollectiveProtocolNames =
    R"(collectives::|realm_broadcast|RealmBroadcast|BroadcastResult|BroadcastWorkload|BroadcastAccount|TransferOperation|TransferGraph|BroadcastInvariants|broadcast_(run|result|report|section|account|workload))";

TEST(Layering, NoCollectiveProtocolIsNamedOutsideItsFolderAndTheRegistry) {
  std::vector<Violation> v;
  for (const char* dir : {"apps", "runner", "report", "model", "scenario", "backend_sim",
                          "backend_verbs", "launch", "core/workload",
                          "core/protocols/tf_verbs_zero_copy"}) {
    for (Violation& x : find(dir, {kCollectiveProtocolNames})) v.push_back(std::move(x));
  }
  for (const auto& file : sources_under("core")) {
    if (file.parent_path() != kRoot / "core") continue;
    if (std::regex_search(strip_comments(read_file(file)), std::regex(kCollectiveProtocolNames))) {
      v.push_back({fs::relative(file, kRoot), kCollectiveProtocolNames});
    }
  }
  EXPECT_TRUE(v.empty()) << "only core/protocols/realm_broadcast/ and the registry name the "
                            "broadcast's types:\n"
                         << describe(v);
}

// The patterns above catch what they are there for.
TEST(Layering, ProtocolNamePatternsCatchPlantedNames) {
  for (const char* planted : {"tf_verbs::RdmaRendezvous r;", "#include \"core/protocols/tf_verbs_zero_copy/x.h\""}) {
    EXPECT_TRUE(std::regex_search(planted, std::regex(kPointToPointProtocolNames[0]))) << planted;
  }
  for (const char* planted :
       {"collectives::TransferGraph g;", "#include \"core/protocols/realm_broadcast/x.h\"",
        "const BroadcastResult* r;", "#include \"x/broadcast_run.h\"", "broadcast_workload_of(s)"}) {
    EXPECT_TRUE(std::regex_search(planted, std::regex(kCollectiveProtocolNames))) << planted;
  }
  EXPECT_FALSE(std::regex_search(std::string("const CollectiveAccount* a;"),
                                 std::regex(kCollectiveProtocolNames)));
}

// Assertion density (TIGER_STYLE, issue 17): every .cc file under core/ and
// backend_sim/ states what must hold, with at least one assertion per
// kLinesPerAssertion lines. Kept simple on purpose:
//   - lines: the file's lines as they are, blank and comment lines included;
//   - assertions: uses of TW_ASSERT, TW_ASSERT_MSG, TW_UNREACHABLE and
//     static_assert outside comments (core/assert.h's macros, the compiler's);
//   - a file of L lines needs floor(L / kLinesPerAssertion) of them, so a file
//     shorter than that needs none.
// Headers are not counted. An assertion states a real invariant (a bound, a
// state, an ordering, a size relation), never outside input: peer bytes,
// files and flags get a Status.
constexpr size_t kLinesPerAssertion = 120;
const std::regex kAssertion(
    R"(\b(TW_ASSERT|TW_ASSERT_MSG|TW_ASSERT_HOT|TW_ASSERT_HOT_MSG|TW_UNREACHABLE|static_assert)\s*\()");

size_t line_count(const std::string& text) {
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n') ++lines;  // a last line without newline
  return lines;
}

size_t assertion_count(const std::string& text) {
  const std::string code = strip_comments(text);
  const std::sregex_iterator first(code.begin(), code.end(), kAssertion);
  return static_cast<size_t>(std::distance(first, std::sregex_iterator()));
}

// "file: N lines, M assertions (needs K)" for each .cc under `dir` with too few.
std::string too_few_assertions(const std::string& dir) {
  std::string offenders;
  for (const auto& file : sources_under(dir)) {
    if (file.extension() != ".cc") continue;
    const std::string text = read_file(file);
    const size_t lines = line_count(text);
    const size_t assertions = assertion_count(text);
    const size_t needs = lines / kLinesPerAssertion;
    if (assertions >= needs) continue;
    offenders += "  " + fs::relative(file, kRoot).string() + ": " + std::to_string(lines) +
                 " lines, " + std::to_string(assertions) + " assertions (needs " +
                 std::to_string(needs) + ")\n";
  }
  return offenders;
}

TEST(Layering, CoreAndSimulatorSourcesAssertOncePer120Lines) {
  const std::string offenders = too_few_assertions("core") + too_few_assertions("backend_sim");
  EXPECT_TRUE(offenders.empty()) << "each .cc under core/ and backend_sim/ needs an assertion per "
                                 << kLinesPerAssertion << " lines:\n"
                                 << offenders;
}

TEST(Layering, AssertionCountSkipsCommentsAndCountsEveryKind) {
  const std::string planted =
      "// TW_ASSERT(in a comment)\n/* static_assert(nor here) */\n"
      "TW_ASSERT(a);\nTW_ASSERT_MSG(b, \"why\");\nTW_UNREACHABLE(\"never\");\n"
      "static_assert(sizeof(int) >= 2);\nnot_TW_ASSERT(c);";
  EXPECT_EQ(assertion_count(planted), 4u);
  EXPECT_EQ(line_count(planted), 7u);
  EXPECT_EQ(line_count("one\ntwo\n"), 2u);
}

TEST(Layering, CheckerFlagsAPlantedViolation) {
  std::string code = strip_comments("// std::thread in a comment is fine\nauto t = std::chrono::steady_clock::now();\n");
  EXPECT_TRUE(std::regex_search(code, std::regex(kNondeterminism[0])));
  EXPECT_FALSE(std::regex_search(code, std::regex(kNondeterminism[3])));
  // One planted use per pattern: each pattern catches what it is there for.
  const std::vector<std::string> planted = {
      "auto t = std::chrono::system_clock::now();", "int x = rand();",
      "std::random_device rd;",                      "std::thread t(f);",
      "usleep(10);",                                 "auto t = time(nullptr);",
      "clock_gettime(CLOCK_MONOTONIC, &ts);",        "auto f = std::async(g);",
      "std::mutex m;",                               "std::mt19937 gen(1);",
      "auto c = clock();"};
  for (const auto& line : planted) {
    bool caught = false;
    for (const auto& pattern : kNondeterminism) {
      caught = caught || std::regex_search(line, std::regex(pattern));
    }
    EXPECT_TRUE(caught) << line;
  }
}

}  // namespace
