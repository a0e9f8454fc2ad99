// `tensorwire check-merge FILES...`: the shards of one search (`check
// --shard I/N`, each writing PREFIX.shard-I-of-N.json) as one result: one
// verdict (the violation of the lowest shard that found one), the union of
// their schedule counts, choice points and events, the union of their
// distinct states, the coverage and transitions summed, and "every order
// explored" when every dfs shard explored all of its share. The files must
// be the N shards of one search (the same search line, scenario bytes and
// N), each once. Exit codes as `check`'s.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tensorwire::app {

struct CheckMergeArgs {
  std::vector<std::string> files;
};

CLI::App* add_check_merge_command(CLI::App& app, CheckMergeArgs& args);
int check_merge_command(const CheckMergeArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
