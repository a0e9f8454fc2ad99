// A file the CLI writes (--trace, --json, --dot, check's counterexample).
// Opened before the run starts so a path that cannot be written is reported at
// once, not after a long run. The bytes go to a temporary file beside the
// target, which is renamed over it only once everything is written: a full
// disk, an error or a kill never leaves a half-written file at the target.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tensorwire::app {

class OutputFile {
 public:
  // Creates the path's missing parent directories and the temporary file.
  // `flag` names the option the path came from, for the error message.
  static Result<OutputFile> open(const std::string& path, std::string_view flag);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // An OutputFile never written removes its temporary file; the target is untouched.
  ~OutputFile();

  // Writes all of `bytes` to the temporary file and renames it over the
  // target. On an error (which names the path) the temporary file is removed
  // and the target keeps whatever it held before.
  Status write_and_close(std::string_view bytes);

  const std::string& path() const { return path_; }
  // The temporary file the bytes go to before the rename.
  const std::string& temporary_path() const { return temporary_path_; }

 private:
  OutputFile(std::FILE* file, std::string path, std::string temporary_path, std::string flag);
  void discard();

  std::FILE* file_ = nullptr;
  std::string path_;
  std::string temporary_path_;
  std::string flag_;
};

// OutputFile::open and write_and_close in one: `path` holds `bytes`, or keeps
// its old content and the error says why.
Status write_file_atomically(const std::string& path, std::string_view bytes,
                             std::string_view flag);

// Whether `a` and `b` name one file: by filesystem identity when both exist
// (hard links, symlinks), otherwise by weakly canonical path ("out/x.json" and
// "./out/x.json" are one file; writing both would lose one).
bool same_file_path(const std::string& a, const std::string& b);

// An error when the output `path` (from option `flag`) names the input file
// `input` (`what`, e.g. "scenario file"): writing it would destroy the input.
// Ok when either path is empty.
Status refuse_overwriting_input(const std::string& path, std::string_view flag,
                                const std::string& input, std::string_view what);

// What is wrong with a run writing --json `json_path` and --trace
// `trace_path` (either may be empty) for the scenario file `scenario_path`:
// an output that would overwrite the scenario, or both naming one file.
// Empty when nothing is.
std::string run_output_paths_problem(const std::string& json_path, const std::string& trace_path,
                                     const std::string& scenario_path);

}  // namespace tensorwire::app
