#include "report/results_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "report/results_json.h"

namespace tensorwire::report {
namespace {

using Json = nlohmann::json;

std::string member_path(const std::string& object_path, std::string_view key) {
  return object_path.empty() ? std::string(key) : object_path + "." + std::string(key);
}

std::string element_path(const std::string& array_path, size_t index) {
  return array_path + "[" + std::to_string(index) + "]";
}

// "a number", "an array", "null", ...: what a JSON value is, for "expected X,
// got Y".
std::string a_type_name(const Json& value) {
  if (value.is_null()) return "null";
  const std::string name = value.type_name();
  const bool vowel = !name.empty() && std::strchr("aeiou", name[0]) != nullptr;
  return (vowel ? "an " : "a ") + name;
}

// Reads typed fields out of one file's JSON tree. Every error names the file
// and the JSON path of the field, so a person can find it with `jq`.
class FieldReader {
 public:
  explicit FieldReader(const std::string& file) : file_(file) {}

  Status error(const std::string& path, const std::string& what) const {
    return Status(StatusCode::kInvalidArgument,
                  file_ + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  // object[key], or an error when it is not there.
  Result<const Json*> member(const Json& object, const std::string& path,
                             std::string_view key) const {
    const auto it = object.find(key);
    if (it == object.end()) return error(member_path(path, key), "missing");
    return &*it;
  }

  Result<const Json*> object(const Json& parent, const std::string& path,
                             std::string_view key) const {
    return typed(parent, path, key, &Json::is_object, "an object");
  }

  Result<const Json*> array(const Json& parent, const std::string& path,
                            std::string_view key) const {
    return typed(parent, path, key, &Json::is_array, "an array");
  }

  Result<std::string> text(const Json& parent, const std::string& path,
                           std::string_view key) const {
    Result<const Json*> v = typed(parent, path, key, &Json::is_string, "a string");
    if (!v) return v.status();
    return (*v)->get<std::string>();
  }

  Result<bool> flag(const Json& parent, const std::string& path, std::string_view key) const {
    Result<const Json*> v = typed(parent, path, key, &Json::is_boolean, "true or false");
    if (!v) return v.status();
    return (*v)->get<bool>();
  }

  // A whole number >= 0 that fits in uint64 (ids, ranks, the seed).
  Result<uint64_t> count(const Json& parent, const std::string& path, std::string_view key) const {
    Result<const Json*> v = member(parent, path, key);
    if (!v) return v.status();
    const std::string at = member_path(path, key);
    if (Status st = check_whole_number(**v, at); !st.is_ok()) return st;
    if ((*v)->is_number_unsigned()) return (*v)->get<uint64_t>();
    return error(at, "expected a number >= 0, got " + (*v)->dump());
  }

  // A time in nanoseconds: a whole number >= 0 that fits in int64.
  Result<int64_t> time_ns(const Json& value, const std::string& at) const {
    if (Status st = check_whole_number(value, at); !st.is_ok()) return st;
    if (value.is_number_unsigned()) {
      if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return error(at, "time " + value.dump() + " ns is out of range");
      }
      return static_cast<int64_t>(value.get<uint64_t>());
    }
    return error(at, "expected a time >= 0, got " + value.dump());
  }

  Result<int64_t> time_ns(const Json& parent, const std::string& path,
                          std::string_view key) const {
    Result<const Json*> v = member(parent, path, key);
    if (!v) return v.status();
    return time_ns(**v, member_path(path, key));
  }

  // A time that may be null (a Recv that never completed): nullopt then.
  Result<std::optional<int64_t>> nullable_time_ns(const Json& parent, const std::string& path,
                                                  std::string_view key) const {
    Result<const Json*> v = member(parent, path, key);
    if (!v) return v.status();
    if ((*v)->is_null()) return std::optional<int64_t>();
    Result<int64_t> t = time_ns(**v, member_path(path, key));
    if (!t) return t.status();
    return std::optional<int64_t>(*t);
  }

  // A time that backends may leave out (measured_ns): nullopt when absent.
  Result<std::optional<int64_t>> optional_time_ns(const Json& parent, const std::string& path,
                                                  std::string_view key) const {
    if (!parent.contains(key)) return std::optional<int64_t>();
    Result<int64_t> t = time_ns(parent, path, key);
    if (!t) return t.status();
    return std::optional<int64_t>(*t);
  }

 private:
  Result<const Json*> typed(const Json& parent, const std::string& path, std::string_view key,
                            bool (Json::*is_type)() const noexcept, const char* expected) const {
    Result<const Json*> v = member(parent, path, key);
    if (!v) return v;
    if (!((**v).*is_type)()) {
      return error(member_path(path, key),
                   std::string("expected ") + expected + ", got " + a_type_name(**v));
    }
    return v;
  }

  Status check_whole_number(const Json& value, const std::string& at) const {
    if (!value.is_number()) return error(at, "expected a number, got " + a_type_name(value));
    if (value.is_number_float()) return error(at, "expected a whole number, got " + value.dump());
    return Status::ok();
  }

  const std::string& file_;
};

Result<ResultsTensor> read_tensor(const FieldReader& in, const Json& j, const std::string& path) {
  if (!j.is_object()) return in.error(path, "expected an object, got " + a_type_name(j));
  ResultsTensor t;
  Result<std::string> name = in.text(j, path, "name");
  if (!name) return name.status();
  t.name = *name;
  Result<uint64_t> src = in.count(j, path, "src");
  if (!src) return src.status();
  t.src = *src;
  Result<uint64_t> dst = in.count(j, path, "dst");
  if (!dst) return dst.status();
  t.dst = *dst;
  Result<std::optional<int64_t>> latency = in.nullable_time_ns(j, path, "latency_ns");
  if (!latency) return latency.status();
  t.backend_ns = *latency;
  Result<std::optional<int64_t>> measured = in.optional_time_ns(j, path, "measured_ns");
  if (!measured) return measured.status();
  t.measured_ns = *measured;
  return t;
}

// A broadcast as one step: its finish (absent while a destination never
// completed) and each destination's done time (-1: never).
Result<ResultsStep> read_broadcast(const FieldReader& in, const Json& root) {
  ResultsStep step;
  step.broadcast = true;
  Result<const Json*> destinations = in.array(root, "", "destinations");
  if (!destinations) return destinations.status();
  bool every_one_done = !(*destinations)->empty();
  std::set<std::string> seen;
  for (size_t i = 0; i < (*destinations)->size(); ++i) {
    const std::string at = element_path("destinations", i);
    const Json& d = (**destinations)[i];
    if (!d.is_object()) return in.error(at, "expected an object, got " + a_type_name(d));
    Result<std::string> memory = in.text(d, at, "memory");
    if (!memory) return memory.status();
    if (!seen.insert(*memory).second) {
      return in.error(member_path(at, "memory"), "destination '" + *memory + "' is listed twice");
    }
    Result<const Json*> done = in.member(d, at, "done_ns");
    if (!done) return done.status();
    ResultsTensor t;
    t.name = *memory;
    t.destination = true;
    // -1: the destination never held every byte.
    if (!((*done)->is_number_integer() && (*done)->get<int64_t>() == -1)) {
      Result<int64_t> ns = in.time_ns(d, at, "done_ns");
      if (!ns) return ns.status();
      t.backend_ns = *ns;
    }
    // A real backend's wall time (verbs).
    Result<std::optional<int64_t>> measured = in.optional_time_ns(d, at, "measured_ns");
    if (!measured) return measured.status();
    t.measured_ns = *measured;
    every_one_done = every_one_done && t.backend_ns.has_value();
    step.tensors.push_back(std::move(t));
  }
  if (every_one_done) {
    Result<int64_t> finish = in.time_ns(root, "", "finish_ns");
    if (!finish) return finish.status();
    step.backend_ns = *finish;
  }
  Result<std::optional<int64_t>> measured = in.optional_time_ns(root, "", "measured_ns");
  if (!measured) return measured.status();
  step.measured_ns = *measured;
  return step;
}

// `finished` was added after the first files were written; those say the same
// with a null wire_bytes.
Result<bool> step_finished(const FieldReader& in, const Json& j, const std::string& path) {
  if (j.contains("finished")) return in.flag(j, path, "finished");
  Result<const Json*> wire_bytes = in.member(j, path, "wire_bytes");
  if (!wire_bytes) return wire_bytes.status();
  return !(*wire_bytes)->is_null();
}

Result<ResultsStep> read_step(const FieldReader& in, const Json& j, const std::string& path) {
  if (!j.is_object()) return in.error(path, "expected an object, got " + a_type_name(j));
  ResultsStep step;
  Result<uint64_t> id = in.count(j, path, "step_id");
  if (!id) return id.status();
  step.step_id = *id;
  Result<bool> finished = step_finished(in, j, path);
  if (!finished) return finished.status();
  if (*finished) {
    Result<int64_t> duration = in.time_ns(j, path, "duration_ns");
    if (!duration) return duration.status();
    step.backend_ns = *duration;
  }
  Result<std::optional<int64_t>> measured = in.optional_time_ns(j, path, "measured_ns");
  if (!measured) return measured.status();
  step.measured_ns = *measured;

  Result<const Json*> tensors = in.array(j, path, "per_tensor");
  if (!tensors) return tensors.status();
  const std::string tensors_path = member_path(path, "per_tensor");
  // (name, src, dst) -> index, to reject a key listed twice: compare matches by it.
  std::map<std::tuple<std::string, uint64_t, uint64_t>, size_t> seen;
  for (size_t i = 0; i < (*tensors)->size(); ++i) {
    const std::string at = element_path(tensors_path, i);
    Result<ResultsTensor> t = read_tensor(in, (**tensors)[i], at);
    if (!t) return t.status();
    const auto [it, inserted] = seen.emplace(std::tuple(t->name, t->src, t->dst), i);
    if (!inserted) {
      return in.error(at, "tensor '" + t->name + "' " + std::to_string(t->src) + "->" +
                              std::to_string(t->dst) + " is listed twice in step " +
                              std::to_string(step.step_id) + " (also " +
                              element_path(tensors_path, it->second) + ")");
    }
    step.tensors.push_back(std::move(t).value());
  }
  return step;
}

// What nlohmann says, without its "[json.exception.parse_error.101] " prefix.
std::string parse_error_text(const nlohmann::json::exception& e) {
  std::string what = e.what();
  if (!what.empty() && what[0] == '[') {
    const size_t end = what.find("] ");
    if (end != std::string::npos) what.erase(0, end + 2);
  }
  return what;
}

// A SAX pass that keeps everything and notes where parsing stopped: the
// byte offset of an error the DOM parser reports without one (a number out
// of double's range, such as 1e400, is nlohmann's out_of_range.406).
class ErrorLocator final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*size*/) override { return true; }
  bool key(string_t& /*value*/) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t /*size*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::json::exception& /*error*/) override {
    position_ = position;
    return false;
  }
  std::size_t position() const { return position_; }

 private:
  std::size_t position_ = 0;
};

// "at line L, column C" of the byte offset where a SAX pass over `text` stops.
std::string error_location(std::string_view text) {
  ErrorLocator locator;
  Json::sax_parse(text, &locator);
  const std::string_view before = text.substr(0, std::min(locator.position(), text.size()));
  const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const size_t newline = before.rfind('\n');
  const size_t column = before.size() - (newline == std::string_view::npos ? 0 : newline + 1);
  return "at line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

Result<ResultsFile> parse_results_json(std::string_view text, const std::string& path) {
  const FieldReader in(path);
  Json root;
  try {
    root = Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return in.error("", "not valid JSON: " + parse_error_text(e));
  } catch (const nlohmann::json::exception& e) {
    // Well-formed but unreadable, such as a number beyond double's range (1e400).
    return in.error("", "not valid JSON: " + parse_error_text(e) + " " + error_location(text));
  }
  if (!root.is_object()) {
    return in.error("", "expected a JSON object at the top level, got " + a_type_name(root));
  }

  Result<uint64_t> version = in.count(root, "", "schema_version");
  if (!version) return version.status();
  if (*version != static_cast<uint64_t>(kResultsSchemaVersion)) {
    return in.error("schema_version", "this tensorwire reads results schema version " +
                                          std::to_string(kResultsSchemaVersion) + ", not " +
                                          std::to_string(*version));
  }
  ResultsFile file;
  file.path = path;
  Result<std::string> backend = in.text(root, "", "backend");
  if (!backend) return backend.status();
  file.backend = *backend;
  Result<const Json*> scenario = in.object(root, "", "scenario");
  if (!scenario) return scenario.status();
  Result<std::string> scenario_name = in.text(**scenario, "scenario", "name");
  if (!scenario_name) return scenario_name.status();
  file.scenario_name = *scenario_name;
  Result<uint64_t> seed = in.count(root, "", "seed");
  if (!seed) return seed.status();
  file.seed = *seed;

  // A broadcast's results have destinations and links, not steps of tensors.
  Result<const Json*> workload = in.object(root, "", "workload");
  if (!workload) return workload.status();
  if (const auto kind = (*workload)->find("kind");
      kind != (*workload)->end() && kind->is_string() && *kind == "broadcast") {
    Result<ResultsStep> broadcast = read_broadcast(in, root);
    if (!broadcast) return broadcast.status();
    file.steps.push_back(std::move(broadcast).value());
    return file;
  }

  Result<const Json*> steps = in.array(root, "", "steps");
  if (!steps) return steps.status();
  std::map<uint64_t, size_t> seen;  // step_id -> index, to reject an id listed twice
  for (size_t i = 0; i < (*steps)->size(); ++i) {
    const std::string at = element_path("steps", i);
    Result<ResultsStep> step = read_step(in, (**steps)[i], at);
    if (!step) return step.status();
    const auto [it, inserted] = seen.emplace(step->step_id, i);
    if (!inserted) {
      return in.error(member_path(at, "step_id"),
                      "step " + std::to_string(step->step_id) + " is listed twice (also " +
                          element_path("steps", it->second) + ")");
    }
    file.steps.push_back(std::move(step).value());
  }
  return file;
}

Result<ResultsFile> read_results_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status(StatusCode::kNotFound, path + ": cannot open: " + std::strerror(errno));
  }
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  // fopen succeeds on a directory; the read is what fails (EISDIR).
  const int read_errno = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (read_errno != 0) {
    return Status(StatusCode::kInvalidArgument,
                  path + ": cannot read: " + std::strerror(read_errno));
  }
  return parse_results_json(text, path);
}

}  // namespace tensorwire::report
