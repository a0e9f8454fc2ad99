// Every way a results JSON file can be bad gives an error value naming the
// file and the JSON path, never an exception.
#include "report/results_reader.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "report/results_json.h"
#include "tests/report/sample_report.h"

namespace tensorwire::report {
namespace {

namespace fs = std::filesystem;
using testing_support::sample_report;
using Json = nlohmann::json;

std::string sample_text() { return results_json_text(sample_report()); }

Status parse_error(const std::string& text) {
  Result<ResultsFile> f = ResultsFile{};
  EXPECT_NO_THROW(f = parse_results_json(text, "b.json"));
  EXPECT_FALSE(f.is_ok()) << "accepted: " << text.substr(0, 200);
  return f.status();
}

TEST(ResultsReader, ReadsTheFileRunWrites) {
  Result<ResultsFile> f = parse_results_json(sample_text(), "a.json");
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f->path, "a.json");
  EXPECT_EQ(f->steps.size(), 2u);
}

TEST(ResultsReader, NotJsonNamesTheFile) {
  const Status st = parse_error("this is not JSON");
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("b.json: not valid JSON: parse error at line 1, column ", 0), 0u)
      << st.message();
}

TEST(ResultsReader, TruncatedJsonSaysTheInputEndedEarly) {
  const std::string text = sample_text();
  const Status st = parse_error(text.substr(0, text.find('\n', text.size() / 2) + 1));
  EXPECT_EQ(st.message().rfind("b.json: not valid JSON: ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("unexpected end of input"), std::string::npos) << st.message();
}

// issue 18 #6: a number beyond double's range is nlohmann's out_of_range,
// not a parse_error; it is bad input naming the file and where, not a crash.
TEST(ResultsReader, ANumberOutOfRangeNamesTheFileAndWhere) {
  std::string text = sample_text();
  const size_t at = text.find("\"seed\": ");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 400);
  const size_t value = at + 8;
  text.replace(value, text.find_first_of(",\n", value) - value, "1e400");
  const Status st = parse_error(text);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("b.json: not valid JSON: number overflow parsing '1e400' at line ", 0),
            0u)
      << st.message();
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + value, '\n'));
  EXPECT_NE(st.message().find("at line " + std::to_string(line) + ", column "), std::string::npos)
      << st.message();
  EXPECT_EQ(parse_error("{\"a\": -1e999}").message(),
            "b.json: not valid JSON: number overflow parsing '-1e999' at line 1, column 12");
}

TEST(ResultsReader, EmptyTextIsNotJson) {
  EXPECT_EQ(parse_error("").message().rfind("b.json: not valid JSON: ", 0), 0u);
}

TEST(ResultsReader, ATopLevelThatIsNotAnObjectIsNamed) {
  EXPECT_EQ(parse_error("[1, 2]").message(),
            "b.json: expected a JSON object at the top level, got an array");
}

// One change to a valid file and the message it must give.
struct BadField {
  const char* name;
  std::function<void(Json&)> change;
  const char* message;
};

void PrintTo(const BadField& c, std::ostream* os) { *os << c.name; }

class ResultsReaderBadField : public ::testing::TestWithParam<BadField> {};

TEST_P(ResultsReaderBadField, NamesTheFileAndTheJsonPath) {
  Json j = Json::parse(sample_text());
  GetParam().change(j);
  const Status st = parse_error(j.dump());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, ResultsReaderBadField,
    ::testing::Values(
        BadField{"MissingSchemaVersion", [](Json& j) { j.erase("schema_version"); },
                 "b.json: schema_version: missing"},
        BadField{"NewerSchema", [](Json& j) { j["schema_version"] = 2; },
                 "b.json: schema_version: this tensorwire reads results schema version 1, not 2"},
        BadField{"BackendNotAString", [](Json& j) { j["backend"] = 3; },
                 "b.json: backend: expected a string, got a number"},
        BadField{"ScenarioNameMissing", [](Json& j) { j["scenario"].erase("name"); },
                 "b.json: scenario.name: missing"},
        BadField{"ScenarioNotAnObject", [](Json& j) { j["scenario"] = "sample"; },
                 "b.json: scenario: expected an object, got a string"},
        BadField{"SeedNegative", [](Json& j) { j["seed"] = -1; },
                 "b.json: seed: expected a number >= 0, got -1"},
        BadField{"StepsMissing", [](Json& j) { j.erase("steps"); }, "b.json: steps: missing"},
        BadField{"StepsNotAnArray", [](Json& j) { j["steps"] = Json::object(); },
                 "b.json: steps: expected an array, got an object"},
        BadField{"StepNotAnObject", [](Json& j) { j["steps"][1] = 5; },
                 "b.json: steps[1]: expected an object, got a number"},
        BadField{"StepIdAFraction", [](Json& j) { j["steps"][0]["step_id"] = 1.5; },
                 "b.json: steps[0].step_id: expected a whole number, got 1.5"},
        BadField{"StepIdTwice", [](Json& j) { j["steps"][1]["step_id"] = 0; },
                 "b.json: steps[1].step_id: step 0 is listed twice (also steps[0])"},
        BadField{"DurationAString", [](Json& j) { j["steps"][1]["duration_ns"] = "8us"; },
                 "b.json: steps[1].duration_ns: expected a number, got a string"},
        BadField{"DurationNegative", [](Json& j) { j["steps"][0]["duration_ns"] = -5; },
                 "b.json: steps[0].duration_ns: expected a time >= 0, got -5"},
        BadField{"FinishedNotABoolean", [](Json& j) { j["steps"][0]["finished"] = "yes"; },
                 "b.json: steps[0].finished: expected true or false, got a string"},
        BadField{"MeasuredNegative", [](Json& j) { j["steps"][1]["measured_ns"] = -1; },
                 "b.json: steps[1].measured_ns: expected a time >= 0, got -1"},
        BadField{"MeasuredNull", [](Json& j) { j["steps"][1]["measured_ns"] = nullptr; },
                 "b.json: steps[1].measured_ns: expected a number, got null"},
        BadField{"PerTensorMissing", [](Json& j) { j["steps"][0].erase("per_tensor"); },
                 "b.json: steps[0].per_tensor: missing"},
        BadField{"TensorNotAnObject", [](Json& j) { j["steps"][0]["per_tensor"][1] = "bias"; },
                 "b.json: steps[0].per_tensor[1]: expected an object, got a string"},
        BadField{"TensorNameMissing",
                 [](Json& j) { j["steps"][0]["per_tensor"][0].erase("name"); },
                 "b.json: steps[0].per_tensor[0].name: missing"},
        BadField{"TensorSrcNegative", [](Json& j) { j["steps"][0]["per_tensor"][1]["src"] = -1; },
                 "b.json: steps[0].per_tensor[1].src: expected a number >= 0, got -1"},
        BadField{"LatencyAString",
                 [](Json& j) { j["steps"][1]["per_tensor"][0]["latency_ns"] = "fast"; },
                 "b.json: steps[1].per_tensor[0].latency_ns: expected a number, got a string"},
        BadField{"LatencyNegative",
                 [](Json& j) { j["steps"][1]["per_tensor"][0]["latency_ns"] = -3; },
                 "b.json: steps[1].per_tensor[0].latency_ns: expected a time >= 0, got -3"},
        BadField{"LatencyOutOfRange",
                 [](Json& j) {
                   j["steps"][1]["per_tensor"][0]["latency_ns"] = 18'446'744'073'709'551'615u;
                 },
                 "b.json: steps[1].per_tensor[0].latency_ns: time 18446744073709551615 ns is out "
                 "of range"},
        BadField{"TensorMeasuredAString",
                 [](Json& j) { j["steps"][1]["per_tensor"][1]["measured_ns"] = "1ms"; },
                 "b.json: steps[1].per_tensor[1].measured_ns: expected a number, got a string"},
        BadField{"TensorTwice",
                 [](Json& j) { j["steps"][1]["per_tensor"][1] = j["steps"][1]["per_tensor"][0]; },
                 "b.json: steps[1].per_tensor[1]: tensor 'weights' 0->1 is listed twice in step "
                 "1 (also steps[1].per_tensor[0])"},
        BadField{"BroadcastWithoutDestinations",
                 [](Json& j) { j["workload"]["kind"] = "broadcast"; },
                 "b.json: destinations: missing"},
        BadField{"BroadcastDestinationTwice",
                 [](Json& j) {
                   j["workload"]["kind"] = "broadcast";
                   j["destinations"] = Json::array({Json{{"memory", "node1/gpu0"}, {"done_ns", 5}},
                                                    Json{{"memory", "node1/gpu0"}, {"done_ns", 7}}});
                 },
                 "b.json: destinations[1].memory: destination 'node1/gpu0' is listed twice"},
        BadField{"BroadcastDoneBeforeZero",
                 [](Json& j) {
                   j["workload"]["kind"] = "broadcast";
                   j["destinations"] = Json::array({Json{{"memory", "node1/host"}, {"done_ns", -7}}});
                 },
                 "b.json: destinations[0].done_ns: expected a time >= 0, got -7"}),
    [](const ::testing::TestParamInfo<BadField>& info) { return std::string(info.param.name); });

TEST(ResultsReader, ABroadcastIsOneStepWithItsDestinationsAsTensors) {
  Json j = Json::parse(sample_text());
  j["workload"]["kind"] = "broadcast";
  j["destinations"] = Json::array({Json{{"memory", "node1/gpu0"}, {"done_ns", 500}},
                                   Json{{"memory", "node2/host"}, {"done_ns", -1}}});
  j["finish_ns"] = 500;
  Result<ResultsFile> f = parse_results_json(j.dump(), "b.json");
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  ASSERT_EQ(f->steps.size(), 1u);
  EXPECT_TRUE(f->steps[0].broadcast);
  // One destination never completed: the broadcast never finished.
  EXPECT_FALSE(f->steps[0].backend_ns.has_value());
  ASSERT_EQ(f->steps[0].tensors.size(), 2u);
  EXPECT_EQ(f->steps[0].tensors[0].name, "node1/gpu0");
  EXPECT_EQ(f->steps[0].tensors[0].backend_ns, 500);
  EXPECT_FALSE(f->steps[0].tensors[1].backend_ns.has_value());
}

// A broadcast on verbs: each destination's done time and the finish are wall
// times its ranks measured, which compare puts in the measured column.
TEST(ResultsReader, AMeasuredBroadcastKeepsItsWallTimes) {
  Json j = Json::parse(sample_text());
  j["workload"]["kind"] = "broadcast";
  j["destinations"] = Json::array({Json{{"memory", "node1/gpu0"}, {"done_ns", 700}, {"measured_ns", 700}}});
  j["finish_ns"] = 700;
  j["measured_ns"] = 700;
  Result<ResultsFile> f = parse_results_json(j.dump(), "b.json");
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f->steps[0].measured_ns, 700);
  EXPECT_EQ(f->steps[0].tensors[0].measured_ns, 700);
  j["destinations"][0]["measured_ns"] = "soon";
  Result<ResultsFile> bad = parse_results_json(j.dump(), "b.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("destinations[0].measured_ns"), std::string::npos)
      << bad.status().message();
}

TEST(ResultsReader, NullLatencyIsARecvThatNeverCompleted) {
  Json j = Json::parse(sample_text());
  j["steps"][1]["per_tensor"][0]["latency_ns"] = nullptr;
  Result<ResultsFile> f = parse_results_json(j.dump(), "a.json");
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_FALSE(f->steps[1].tensors[0].backend_ns.has_value());
}

// Files written before steps had `finished` say so with a null wire_bytes; a
// step that never finished may have a negative duration_ns, which is ignored.
TEST(ResultsReader, WithoutFinishedANullWireBytesMeansTheStepNeverFinished) {
  Json j = Json::parse(sample_text());
  for (Json& step : j["steps"]) step.erase("finished");
  j["steps"][1]["wire_bytes"] = nullptr;
  j["steps"][1]["duration_ns"] = -500'000;
  Result<ResultsFile> f = parse_results_json(j.dump(), "old.json");
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f->steps[0].backend_ns, 12'345);
  EXPECT_FALSE(f->steps[1].backend_ns.has_value());
}

class ResultsReaderFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tensorwire_results_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(ResultsReaderFile, ReadsAFileWrittenByResultsJson) {
  const std::string path = (dir_ / "a.json").string();
  std::ofstream(path) << sample_text();
  Result<ResultsFile> f = read_results_file(path);
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  EXPECT_EQ(f->path, path);
  EXPECT_EQ(f->steps[0].backend_ns, 12'345);
}

TEST_F(ResultsReaderFile, AMissingFileIsNotFoundNamingIt) {
  const std::string path = (dir_ / "missing.json").string();
  Result<ResultsFile> f = read_results_file(path);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(f.status().message(), path + ": cannot open: No such file or directory");
}

TEST_F(ResultsReaderFile, ADirectoryIsNotAResultsFile) {
  Result<ResultsFile> f = read_results_file(dir_.string());
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().message().rfind(dir_.string() + ": cannot ", 0), 0u) << f.status().message();
}

TEST_F(ResultsReaderFile, BadContentNamesTheFilePath) {
  const std::string path = (dir_ / "b.json").string();
  std::ofstream(path) << "{\"schema_version\": 1";
  Result<ResultsFile> f = read_results_file(path);
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().message().rfind(path + ": not valid JSON: ", 0), 0u) << f.status().message();
}

}  // namespace
}  // namespace tensorwire::report
