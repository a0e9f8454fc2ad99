#include "apps/tensorwire/plot_command.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "apps/tensorwire/exit_codes.h"
#include "apps/tensorwire/option_checks.h"
#include "apps/tensorwire/scenario_argument.h"

#ifndef TENSORWIRE_SOURCE_ROOT
#error "apps/tensorwire/meson.build passes -DTENSORWIRE_SOURCE_ROOT"
#endif

extern char** environ;

namespace tensorwire::app {
namespace {

// Debian's interpreter, which python3-matplotlib installs into (a python3
// earlier on PATH, such as a pyenv one, may lack it).
constexpr const char* kPython = "/usr/bin/python3";

std::string plot_script() { return std::string(TENSORWIRE_SOURCE_ROOT) + "/scripts/plot_sweep.py"; }

}  // namespace

CLI::App* add_plot_command(CLI::App& app, PlotArgs& args) {
  CLI::App* plot = app.add_subcommand(
      "plot", "Draw a sweep's plots (PNG and SVG, matplotlib) from its sweep.csv");
  plot->add_option("SWEEP_CSV", args.csv_path, "sweep.csv written by tensorwire sweep")
      ->required()
      ->type_name("");
  plot->add_option("--out", args.out_dir, "Folder for the plots (default: the CSV's folder)")
      ->type_name("DIR")
      ->check(non_empty_value());
  return plot;
}

int plot_command(const PlotArgs& args, std::ostream& out, std::ostream& err) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(args.csv_path, ec)) {
    err << kErrorPrefix << "sweep CSV '" << args.csv_path << "' does not exist\n";
    return kExitBadInput;
  }
  if (!fs::exists(kPython, ec) || !fs::exists(plot_script(), ec)) {
    err << kErrorPrefix << "plotting needs " << kPython << " with python3-matplotlib and "
        << plot_script() << " (scripts/install_deps.sh installs the package)\n";
    return kExitBadInput;
  }
  const std::string out_dir =
      args.out_dir.empty() ? fs::path(args.csv_path).parent_path().string() : args.out_dir;
  std::vector<std::string> words = {kPython, plot_script(), args.csv_path,
                                    out_dir.empty() ? "." : out_dir};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  out << std::flush;
  pid_t pid = 0;
  if (int e = posix_spawn(&pid, kPython, nullptr, nullptr, argv.data(), environ); e != 0) {
    err << kErrorPrefix << "posix_spawn of " << kPython << " failed: " << std::strerror(e) << "\n";
    return kExitInternalError;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    err << kErrorPrefix << "plot_sweep.py failed (its message is above)\n";
    return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? kExitBadInput : kExitInternalError;
  }
  return kExitOk;
}

}  // namespace tensorwire::app
