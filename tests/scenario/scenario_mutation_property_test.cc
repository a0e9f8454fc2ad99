// Property: a randomly damaged scenario file either loads into a workload that
// fits its cluster, or is rejected with a ScenarioError naming file:line:column.
// Never a crash, never another exception, never a half-valid Scenario.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

const std::string kScenarios = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<std::string>& base_texts() {
  static const std::vector<std::string> texts = [] {
    std::vector<std::string> t;
    for (const char* f : {"quickstart.toml", "meta_data_change.toml", "string_tensors.toml",
                          "gpu_no_direct.toml", "resnet50_ps.toml"}) {
      t.push_back(read(kScenarios + "/" + f));
    }
    return t;
  }();
  return texts;
}

// Spans of `text` made of characters in `set`.
std::vector<std::pair<size_t, size_t>> runs(const std::string& text, const std::string& set) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t i = 0;
  while (i < text.size()) {
    if (set.find(text[i]) == std::string::npos) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && set.find(text[j]) != std::string::npos) ++j;
    out.emplace_back(i, j - i);
    i = j;
  }
  return out;
}

// Quoted strings (without the quotes) on single lines.
std::vector<std::pair<size_t, size_t>> quoted_strings(const std::string& text) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t i = 0;
  while ((i = text.find('"', i)) != std::string::npos) {
    size_t j = text.find('"', i + 1);
    if (j == std::string::npos || text.find('\n', i) < j) break;
    out.emplace_back(i + 1, j - i - 1);
    i = j + 1;
  }
  return out;
}

constexpr std::array<const char*, 14> kNumbers = {"0",
                                                  "1",
                                                  "2",
                                                  "3",
                                                  "7",
                                                  "-1",
                                                  "64",
                                                  "65536",
                                                  "2147483648",
                                                  "9223372036854775807",
                                                  "99999999999999999999",
                                                  "1.5",
                                                  "1e3",
                                                  "0x10"};
constexpr std::array<const char*, 18> kStrings = {
    "",          "gpu0",   "gpu9",       "host",       "host_pageable",
    "1e999Gbps", "0s",     "-1us",       "string",     "parameter_server",
    "tensors",   "vgg16",  "recv_first", "send_first", "timing",
    "\\u0000",   "a\\\"b", "float64"};
const std::string kAlphabet = "=[]{}\"'#.,-+0123456789eE \n\tx_:";

std::string mutate(std::string text, int kind) {
  switch (kind) {
    case 0: {  // delete a few characters
      if (text.empty()) return text;
      size_t at = *rc::gen::inRange<size_t>(0, text.size());
      size_t n = *rc::gen::inRange<size_t>(1, 12);
      return text.erase(at, n);
    }
    case 1: {  // insert a character TOML cares about
      size_t at = *rc::gen::inRange<size_t>(0, text.size() + 1);
      char c = kAlphabet[*rc::gen::inRange<size_t>(0, kAlphabet.size())];
      return text.insert(at, 1, c);
    }
    case 2: {  // replace a number
      auto numbers = runs(text, "0123456789");
      if (numbers.empty()) return text;
      auto [at, n] = numbers[*rc::gen::inRange<size_t>(0, numbers.size())];
      return text.replace(at, n, *rc::gen::elementOf(kNumbers));
    }
    case 3: {  // replace a string's content
      auto strings = quoted_strings(text);
      if (strings.empty()) return text;
      auto [at, n] = strings[*rc::gen::inRange<size_t>(0, strings.size())];
      return text.replace(at, n, *rc::gen::elementOf(kStrings));
    }
    default: {  // duplicate, drop or swap whole lines
      std::vector<std::string> lines;
      std::stringstream in(text);
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      if (lines.size() < 2) return text;
      size_t a = *rc::gen::inRange<size_t>(0, lines.size());
      size_t b = *rc::gen::inRange<size_t>(0, lines.size());
      int op = *rc::gen::inRange(0, 3);
      if (op == 0) lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(b), lines[a]);
      if (op == 1) lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(a));
      if (op == 2) std::swap(lines[a], lines[b]);
      std::string out;
      for (const auto& line : lines) out += line + "\n";
      return out;
    }
  }
}

// What a loaded scenario must satisfy for the driver to play it.
void check_fits_cluster(const Scenario& s) {
  RC_ASSERT(s.cluster.nodes >= 2u);
  RC_ASSERT(!s.workload.steps.empty());
  for (const auto& step : s.workload.steps) {
    std::set<std::pair<RankId, std::string>> sent;
    for (const auto& phase : step.phases) {
      for (const auto& t : phase.transfers) {
        RC_ASSERT(t.src < s.cluster.nodes);
        RC_ASSERT(t.dst < s.cluster.nodes);
        RC_ASSERT(t.src != t.dst);
        RC_ASSERT(t.shape.num_elements().has_value());
        if (is_device(t.src_kind)) RC_ASSERT(t.src_device < s.cluster.gpus_per_node);
        if (is_device(t.dst_kind)) RC_ASSERT(t.dst_device < s.cluster.gpus_per_node);
        RC_ASSERT(sent.emplace(t.src, t.name).second);
      }
    }
  }
}

RC_GTEST_PROP(ScenarioMutation, DamagedFilesLoadValidOrThrowScenarioErrorWithAPosition, ()) {
  const auto& bases = base_texts();
  std::string text = bases[*rc::gen::inRange<size_t>(0, bases.size())];
  const int mutations = *rc::gen::inRange(1, 4);
  for (int i = 0; i < mutations; ++i) text = mutate(std::move(text), *rc::gen::inRange(0, 5));
  try {
    Scenario s = load_scenario_string(text, "m.toml", kScenarios);
    check_fits_cluster(s);
    RC_TAG("loaded");
  } catch (const ScenarioError& e) {
    const std::string what = e.what();
    // "m.toml:LINE:COLUMN: ..." or, for a model file, that file's path.
    RC_ASSERT(what.rfind("m.toml:", 0) == 0 || what.find("/models/") != std::string::npos);
    RC_TAG("rejected");
  }
}

}  // namespace
}  // namespace tensorwire
