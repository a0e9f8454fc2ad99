#include "apps/tensorwire/check_shard.h"

#include <charconv>
#include <thread>

#include "apps/tensorwire/option_checks.h"

namespace tensorwire::app {

bool parse_shard(const std::string& text, uint32_t& index, uint32_t& count) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [after_index, e1] = std::from_chars(begin, begin + slash, index);
  auto [after_count, e2] = std::from_chars(begin + slash + 1, end, count);
  return e1 == std::errc() && e2 == std::errc() && after_index == begin + slash && after_count == end &&
         slash > 0 && count >= 1 && index < count;
}

void add_scale_options(CLI::App& check, CheckArgs& args) {
  check.add_option("--jobs", args.jobs,
                   "Threads to run executions on (default 1; 0: every core); the result is the "
                   "same for any number. On 2 cores more threads are slower today "
                   "(docs/PERFORMANCE.md)")
      ->check(CLI::Range(0u, 4096u))
      ->type_name("N");
  check.add_option_function<std::string>(
           "--shard",
           [&args](const std::string& text) { parse_shard(text, args.shard_index, args.shard_count); },
           "Run shard I of N of the search (random, pct: every N-th execution; dfs: a share of "
           "the alternatives); writes PREFIX.shard-I-of-N.json for `tensorwire check-merge` "
           "(Slurm: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            uint32_t i = 0, n = 0;
            return parse_shard(text, i, n) ? std::string()
                                           : "'" + text + "' is not a shard I/N (0 <= I < N, N >= 1)";
          },
          "", "I/N"))
      ->type_name("I/N");
  check.add_option("--result", args.result_path,
                   "Write the search's result (counts, coverage, states, verdict) as JSON, for "
                   "`tensorwire check-merge` (default with --shard: PREFIX.shard-I-of-N.json)")
      ->type_name("FILE")
      ->check(non_empty_value());
}

uint32_t jobs_of(const CheckArgs& args) {
  // One thread unless asked: the parallel search's bookkeeping stays on one
  // thread, and on this project's 2-core machines it is slower than one thread
  // (docs/PERFORMANCE.md, "Checking at scale"); it gives the same result.
  if (args.jobs == 0) return std::max(1u, std::thread::hardware_concurrency());
  return args.jobs;
}

CheckArgs sharded_args(const CheckArgs& args) {
  if (args.shard_count == 0) return args;
  CheckArgs sharded = args;
  sharded.out_prefix = args.out_prefix + ".shard-" + std::to_string(args.shard_index) + "-of-" +
                       std::to_string(args.shard_count);
  if (sharded.result_path.empty()) sharded.result_path = sharded.out_prefix + ".json";
  return sharded;
}

}  // namespace tensorwire::app
