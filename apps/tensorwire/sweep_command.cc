#include "apps/tensorwire/sweep_command.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "apps/tensorwire/check_shard.h"
#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/option_checks.h"
#include "apps/tensorwire/output_file.h"
#include "apps/tensorwire/plot_command.h"
#include "apps/tensorwire/scenario_argument.h"
#include "apps/tensorwire/sweep_processes.h"
#include "apps/tensorwire/sweep_table.h"
#include "core/assert.h"
#include "core/units_format.h"
#include "launch/rank_processes.h"
#include "report/content_hash.h"
#include "report/progress_bar.h"
#include "scenario/scenario_loader.h"
#include "scenario/text_file.h"

#ifndef TENSORWIRE_VERSION
#error "apps/tensorwire/meson.build passes -DTENSORWIRE_VERSION"
#endif

namespace tensorwire::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What the sweep will run, checked before anything runs.
struct SweepPlan {
  std::vector<SweepAxis> axes;
  size_t points = 0;
  size_t jobs = 1;
  std::string scenario_text;  // its bytes decide whether a finished point is reused
  std::string executable;
  uint32_t shard_index = 0;  // the points run: index % shard_count == shard_index
  uint32_t shard_count = 1;
};

std::optional<size_t> parse_jobs(const std::string& text, std::ostream& err) {
  if (text.empty()) return std::max(1u, std::thread::hardware_concurrency());
  size_t used = 0;
  unsigned long jobs = 0;
  try {
    jobs = std::stoul(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || jobs < 1 || jobs > 1024 || text[0] == '-') {
    err << kErrorPrefix << "--jobs must be a whole number from 1 to 1024, not '" << text << "'\n";
    return std::nullopt;
  }
  return jobs;
}

std::string point_text(const std::vector<ScenarioOverride>& point) {
  std::string text;
  for (const ScenarioOverride& o : point)
    text += (text.empty() ? "" : ", ") + o.key + "=" + o.value;
  return text;
}

// Every point loads: a bad value is reported before anything runs.
bool check_points(const SweepArgs& args, const SweepPlan& plan, std::ostream& err) {
  for (size_t i = 0; i < plan.points; ++i) {
    const std::vector<ScenarioOverride> point = sweep_point(plan.axes, i);
    try {
      (void)load_scenario_file(args.scenario_path, point);
    } catch (const std::exception& e) {
      err << kErrorPrefix << "point " << i << " (" << point_text(point) << "): " << e.what()
          << "\n";
      return false;
    }
  }
  return true;
}

std::optional<SweepPlan> plan_sweep(const SweepArgs& args, std::ostream& err) {
  SweepPlan plan;
  for (const std::string& flag : args.axes) {
    Result<SweepAxis> axis = parse_sweep_axis(flag);
    if (!axis) {
      err << kErrorPrefix << axis.status().message() << "\n";
      return std::nullopt;
    }
    plan.axes.push_back(std::move(axis).value());
  }
  Result<size_t> points = sweep_point_count(plan.axes);
  std::optional<size_t> jobs = parse_jobs(args.jobs, err);
  Result<std::string> text = read_text_file(args.scenario_path);
  Result<std::string> executable = launch::self_executable();
  if (!points || !text || !executable) {
    const Status st = !points ? points.status() : !text ? text.status() : executable.status();
    err << kErrorPrefix << (text ? "" : args.scenario_path + ": ") << st.message() << "\n";
    return std::nullopt;
  }
  if (!jobs) return std::nullopt;
  if (!args.shard.empty() && !parse_shard(args.shard, plan.shard_index, plan.shard_count)) {
    err << kErrorPrefix << "--shard: '" << args.shard << "' is not I/N (0 <= I < N)\n";
    return std::nullopt;
  }
  plan.points = *points;
  plan.jobs = *jobs;
  plan.scenario_text = std::move(text).value();
  plan.executable = std::move(executable).value();
  if (!check_points(args, plan, err)) return std::nullopt;
  return plan;
}

std::string point_stem(const SweepArgs& args, size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "p%04zu", index);
  return (fs::path(args.out_dir) / "points" / name).string();
}

// What decides a point's result: a finished point with the same key is reused.
std::string point_key(const SweepArgs& args, const SweepPlan& plan, size_t index) {
  return std::string("tensorwire ") + TENSORWIRE_VERSION + "\nscenario " +
         report::format_hash(report::fnv1a_64(plan.scenario_text)) + "\nrun" +
         override_flags_text(sweep_point(plan.axes, index)) +
         (args.timing_only ? " --timing-only" : "") + "\n";
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool reusable(const std::string& stem, const std::string& key) {
  std::error_code ec;
  return fs::is_regular_file(stem + ".json", ec) && read_whole(stem + ".key") == key;
}

PointProcess point_process(const SweepArgs& args, const SweepPlan& plan, size_t index) {
  const std::string stem = point_stem(args, index);
  PointProcess p{{plan.executable, "run", args.scenario_path, "--json", stem + ".json"},
                 stem + ".log"};
  for (const ScenarioOverride& o : sweep_point(plan.axes, index)) {
    p.argv.push_back("--set");
    p.argv.push_back(o.key + "=" + o.value);
  }
  if (args.timing_only) p.argv.push_back("--timing-only");
  return p;
}


struct SweepOutcome {
  size_t own_points = 0;  // the points of this shard (every point when not sharded)
  size_t reused = 0;
  std::vector<std::string> failures;  // one line per point that gave no results
};

// Runs the points that have no reusable results, on `plan.jobs` processes.
std::optional<SweepOutcome> run_points(const SweepArgs& args, const SweepPlan& plan,
                                       std::ostream& err, bool progress) {
  SweepOutcome outcome;
  std::vector<PointProcess> processes;
  std::vector<size_t> index_of;  // process -> point
  for (size_t i = 0; i < plan.points; ++i) {
    if (i % plan.shard_count != plan.shard_index) continue;
    ++outcome.own_points;
    const std::string stem = point_stem(args, i);
    if (reusable(stem, point_key(args, plan, i))) {
      ++outcome.reused;
      continue;
    }
    std::error_code ignored;
    fs::remove(stem + ".key", ignored);  // a run cut short is never reused
    fs::remove(stem + ".json", ignored);
    processes.push_back(point_process(args, plan, i));
    index_of.push_back(i);
  }
  report::ProgressBar bar(err, progress, 1, "points");
  size_t done = 0;
  bar.update(outcome.reused, outcome.own_points);
  const Status st = run_point_processes(processes, plan.jobs, [&](size_t p, int exit_code) {
    const size_t i = index_of[p];
    const std::string stem = point_stem(args, i);
    std::error_code ec;
    if ((exit_code == kExitOk || exit_code == kExitCheckFailed) &&
        fs::is_regular_file(stem + ".json", ec)) {
      std::ofstream(stem + ".key", std::ios::binary) << point_key(args, plan, i);
    } else {
      outcome.failures.push_back("point " + std::to_string(i) + " (" +
                                 point_text(sweep_point(plan.axes, i)) + "): run exited with " +
                                 std::to_string(exit_code) + "; its output: " + stem + ".log");
    }
    bar.update(outcome.reused + ++done, outcome.own_points);
  });
  bar.finish();
  if (!st.is_ok()) {
    err << kErrorPrefix << st.message() << "\n";
    return std::nullopt;
  }
  return outcome;
}

// The rows of the points that have results, in point order.
std::vector<SweepRow> collect_rows(const SweepArgs& args, const SweepPlan& plan,
                                   SweepOutcome& outcome) {
  std::vector<SweepRow> rows;
  for (size_t i = 0; i < plan.points; ++i) {
    const std::string path = point_stem(args, i) + ".json";
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    try {
      rows.push_back(sweep_row(i, sweep_point(plan.axes, i), json::parse(read_whole(path))));
    } catch (const json::exception& e) {
      outcome.failures.push_back("point " + std::to_string(i) + ": " + path + ": " + e.what());
    }
  }
  return rows;
}

bool write_file(const std::string& path, const std::string& bytes, std::ostream& err) {
  Result<OutputFile> file = OutputFile::open(path, "--out");
  Status st = file ? file->write_and_close(bytes) : file.status();
  if (!st.is_ok()) err << kErrorPrefix << st.message() << "\n";
  return st.is_ok();
}

const json* row_value(const SweepRow& row, const std::string& column) {
  for (const auto& [name, value] : row.cells) {
    if (name == column) return &value;
  }
  return nullptr;
}

// A line per point on the terminal: the swept values, the steady step, the bandwidth.
void print_rows(const std::vector<SweepAxis>& axes, const std::vector<SweepRow>& rows,
                std::ostream& out) {
  for (const SweepRow& row : rows) {
    std::string line = "  ";
    for (const SweepAxis& axis : axes)
      line += axis.key + "=" + row_value(row, axis.key)->get<std::string>() + "  ";
    if (const json* step = row_value(row, "steady_step_ns")) {
      line += "step " + format_duration_ns(step->get<int64_t>());
    }
    if (const json* gbps = row_value(row, "bandwidth_gbps")) {
      char text[32];
      std::snprintf(text, sizeof text, "  %.3g Gb/s", gbps->get<double>());
      line += text;
    }
    if (const json* passed = row_value(row, "passed"); passed && !passed->get<bool>())
      line += "  FAILED";
    out << line << "\n";
  }
}

// A shard writes no table: the last, unsharded sweep in the same folder does.
int report_shard(const SweepArgs& args, const SweepPlan& plan, const SweepOutcome& outcome,
                 std::ostream& out, std::ostream& err) {
  out << "shard " << plan.shard_index << "/" << plan.shard_count << ": " << outcome.own_points
      << " of " << plan.points << " points (" << outcome.reused << " reused) in " << args.out_dir
      << "/points; `tensorwire sweep` without --shard in the same --out writes the table\n";
  for (const std::string& failure : outcome.failures) err << kErrorPrefix << failure << "\n";
  return outcome.failures.empty() ? kExitOk : kExitCheckFailed;
}

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& args) {
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "Run a scenario at every point of a grid of --set values, one process per core, and write "
      "DIR/sweep.csv and DIR/sweep.json (and plots with --plot)");
  sweep->add_option("SCENARIO", args.scenario_path, "Scenario file (TOML)")
      ->required()
      ->type_name("");
  sweep
      ->add_option("--set", args.axes,
                   "An axis: KEY=V1,V2,... with ranges A..B:xF or A..B:+S, e.g. "
                   "--set cluster.nic_bandwidth=25Gbps..200Gbps:x2 --set "
                   "'workload.tensor[*].bytes=1KiB..64MiB:x4' (repeatable: the grid is every "
                   "combination)")
      ->type_name("KEY=VALUES")
      ->allow_extra_args(false)
      ->required();
  sweep->add_option("--out", args.out_dir, "Folder for sweep.csv, sweep.json, points/ and plots")
      ->required()
      ->type_name("DIR")
      ->check(non_empty_value());
  sweep->add_option("--jobs", args.jobs, "Points run at once (default: one per core)")
      ->type_name("N");
  sweep->add_flag("--timing-only", args.timing_only, "Run every point in timing mode");
  sweep->add_flag("--plot", args.plot, "Also draw the plots (tensorwire plot) into DIR");
  sweep
      ->add_option("--shard", args.shard,
                   "Run only points I, I+N, ... and write no table (Slurm: --shard "
                   "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); a sweep without --shard in "
                   "the same DIR then reuses every shard's points and writes the table")
      ->type_name("I/N");
  return sweep;
}

int sweep_command(const SweepArgs& args, std::ostream& out, std::ostream& err, bool progress) {
  if (!load_scenario_argument(args.scenario_path, err)) return kExitBadInput;
  std::optional<SweepPlan> plan = plan_sweep(args, err);
  if (!plan) return kExitBadInput;
  std::error_code ec;
  fs::create_directories(fs::path(args.out_dir) / "points", ec);
  if (ec) {
    err << kErrorPrefix << "--out: cannot create " << args.out_dir << "/points: " << ec.message()
        << "\n";
    return kExitBadInput;
  }
  out << "tensorwire sweep " << args.scenario_path << ": " << plan->points << " points on "
      << plan->jobs << " processes\n"
      << std::flush;
  std::optional<SweepOutcome> outcome = run_points(args, *plan, err, progress);
  if (!outcome) return kExitInternalError;
  if (plan->shard_count > 1) return report_shard(args, *plan, *outcome, out, err);
  std::vector<SweepRow> rows = collect_rows(args, *plan, *outcome);
  const std::string csv = (fs::path(args.out_dir) / "sweep.csv").string();
  const std::string json_path = (fs::path(args.out_dir) / "sweep.json").string();
  if (!write_file(csv, sweep_csv(rows), err) ||
      !write_file(json_path, sweep_json(args.scenario_path, plan->axes, rows).dump(2) + "\n",
                  err)) {
    return kExitBadInput;
  }
  print_rows(plan->axes, rows, out);
  out << rows.size() << " of " << plan->points << " points (" << outcome->reused << " reused) -> "
      << csv << ", " << json_path << "\n";
  for (const std::string& failure : outcome->failures) err << kErrorPrefix << failure << "\n";
  if (!outcome->failures.empty()) return kExitCheckFailed;
  if (args.plot) return plot_command(PlotArgs{csv, args.out_dir}, out, err);
  return kExitOk;
}

}  // namespace tensorwire::app
