// PCT against the bug zoo: for every planted bug of every registered protocol,
// on each shipped model scenario its protocol runs, the fraction of M
// executions that find the bug with PCT at depths 1..3 and with random walks,
// beside PCT's guarantee 1 / (n * k^(d-1)) (n agents, k steps, both measured).
// Prints a Markdown table (docs/CHECKING.md holds one run of it).
//
//   tensorwire_pct_zoo [--runs M] [--seed S] [--scenarios DIR] [--bug NAME]
//
// Executions are run the way `tensorwire check` runs them (run_execution on
// the model_scenario()'d scenario, no faults), each with its own strategy
// seed; PCT's k is the most steps an execution took so far, starting from
// the longest random walk, as check() measures it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "core/protocols/protocol_registry.h"
#include "core/splitmix64.h"
#include "model/explorer.h"
#include "scenario/scenario_loader.h"

namespace tensorwire {
namespace {

// The model scenarios the project ships, then three larger scenarios with
// features some bugs need (a GPU source without GPUDirect, string tensors,
// meta-data changes, three ranks). model_timeouts adds nothing here: its bug
// needs an injected timeout, and these executions inject no fault.
const char* const kScenarios[] = {
    "model_2x2",        "model_2x3",     "model_reshape",          "model_strings",
    "model_gpu_staging", "model_oneflow", "model_broadcast",        "model_broadcast_naive",
    "model_broadcast_tree", "gpu_no_direct", "string_tensors", "meta_data_change"};

struct Args {
  uint64_t runs = 200;
  uint64_t seed = 1;
  std::string dir = std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios";
  std::string bug;  // empty: every bug
};

bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "tensorwire_pct_zoo: %s needs a value\n", argv[i]);
      return false;
    }
    const char* value = argv[++i];
    if (a == "--runs") {
      args.runs = std::strtoull(value, nullptr, 10);
    } else if (a == "--seed") {
      args.seed = std::strtoull(value, nullptr, 10);
    } else if (a == "--scenarios") {
      args.dir = value;
    } else if (a == "--bug") {
      args.bug = value;
    } else {
      std::fprintf(stderr, "tensorwire_pct_zoo: unknown option %s\n", argv[i - 1]);
      return false;
    }
  }
  if (args.runs == 0) {
    std::fprintf(stderr, "tensorwire_pct_zoo: --runs must be a positive number\n");
    return false;
  }
  return true;
}

bool found(const model::Execution& e) {
  return e.outcome == model::CheckOutcome::kSafety || e.outcome == model::CheckOutcome::kLiveness;
}

uint64_t seed_of(uint64_t base, uint64_t strategy, uint64_t run) {
  uint64_t state = base * 1000003 + strategy * 7919 + run;
  return splitmix64(state);
}

struct Measured {
  uint64_t random_found = 0;
  uint64_t longest_random = 0;  // steps: events run
  uint64_t pct_found[3] = {0, 0, 0};
  uint64_t n = 0;  // agents, the most any PCT execution met
  uint64_t k = 0;  // steps, the most any execution took
  bool bad_input = false;
};

Measured measure(const Scenario& scenario, const Args& args) {
  Measured m;
  NullTraceSink trace;
  for (uint64_t i = 0; i < args.runs; ++i) {
    model::RandomWalkStrategy walk(seed_of(args.seed, 0, i));
    const model::Execution e = model::run_execution(scenario, scenario.seed, walk, trace);
    m.bad_input = m.bad_input || e.outcome == model::CheckOutcome::kBadInput;
    m.random_found += found(e) ? 1 : 0;
    m.longest_random = std::max(m.longest_random, e.events);
  }
  m.k = std::max<uint64_t>(m.longest_random, 1);
  for (uint32_t d = 1; d <= 3; ++d) {
    for (uint64_t i = 0; i < args.runs; ++i) {
      model::PctStrategy pct(seed_of(args.seed, d, i), d, m.k);
      const model::Execution e = model::run_execution(scenario, scenario.seed, pct, trace);
      m.bad_input = m.bad_input || e.outcome == model::CheckOutcome::kBadInput;
      m.pct_found[d - 1] += found(e) ? 1 : 0;
      m.k = std::max(m.k, pct.steps());
      m.n = std::max<uint64_t>(m.n, pct.agents());
    }
  }
  return m;
}

// The scenario's protocol with `bug` planted; false when the scenario runs
// another protocol.
bool plant(Scenario& s, const ProtocolDescriptor& protocol, std::string_view bug) {
  if (s.protocol.name != protocol.name()) return false;
  if (!protocol.plant_bug(s.protocol.options, bug)) {
    std::fprintf(stderr, "tensorwire_pct_zoo: %s has no bug %.*s\n", s.protocol.name.c_str(),
                 static_cast<int>(bug.size()), bug.data());
    std::exit(2);
  }
  return true;
}

void print_rows(std::string_view bug, const char* scenario, const Measured& m, uint64_t runs) {
  const double r = static_cast<double>(runs);
  for (uint32_t d = 1; d <= 3; ++d) {
    const double bound = 1.0 / (static_cast<double>(m.n) * std::pow(static_cast<double>(m.k), d - 1.0));
    std::printf("| %.*s | %s | %llu | %llu | %u | %.3f | %.2g | %.3f |%s\n", static_cast<int>(bug.size()),
                bug.data(), scenario, static_cast<unsigned long long>(m.n),
                static_cast<unsigned long long>(m.k), d, static_cast<double>(m.pct_found[d - 1]) / r, bound,
                static_cast<double>(m.random_found) / r, m.bad_input ? " bad input in some runs" : "");
  }
  std::fflush(stdout);
}

// Every bug (and "none", the control: no execution may find anything) on
// every scenario of its protocol; rows only where some strategy found it,
// and a line for bugs found nowhere.
int run(const Args& args) {
  std::printf("| bug | scenario | n | k | d | PCT found | bound 1/(n k^(d-1)) | random found |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> never;
  for (const ProtocolDescriptor* protocol : registered_protocols()) {
    std::vector<std::string_view> bugs = protocol->planted_bugs();
    bugs.insert(bugs.begin(), "none");
    for (std::string_view bug : bugs) {
      if (!args.bug.empty() && bug != args.bug) continue;
      bool anywhere = false;
      for (const char* name : kScenarios) {
        Scenario s = load_scenario_file(args.dir + "/" + name + ".toml");
        if (!plant(s, *protocol, bug)) continue;
        const Measured m = measure(model::model_scenario(s), args);
        const bool hit = m.random_found > 0 || m.pct_found[0] + m.pct_found[1] + m.pct_found[2] > 0;
        if (hit || bug == "none") print_rows(bug, name, m, args.runs);
        anywhere = anywhere || hit;
      }
      if (!anywhere && bug != "none") never.push_back(std::string(protocol->name()) + "/" + std::string(bug));
    }
  }
  for (const std::string& b : never) std::printf("\nNot found on any scenario, by any strategy: %s\n", b.c_str());
  return 0;
}

}  // namespace
}  // namespace tensorwire

int main(int argc, char** argv) {
  tensorwire::Args args;
  if (!tensorwire::parse_args(argc, argv, args)) return 2;
  try {
    return tensorwire::run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensorwire_pct_zoo: %s\n", e.what());
    return 1;
  }
}
