// A file the CLI writes (--trace, --json). Opened before the run starts so a
// path that cannot be written is reported at once, not after a long run.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "core/status.h"

namespace tensorwire::app {

class OutputFile {
 public:
  // `flag` names the option the path came from, for the error message.
  static Result<OutputFile> open(const std::string& path, std::string_view flag);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  // Writes all of `bytes` and closes the file; an error names the path.
  Status write_and_close(std::string_view bytes);

  const std::string& path() const { return path_; }

 private:
  OutputFile(std::FILE* file, std::string path, std::string flag);

  std::FILE* file_ = nullptr;
  std::string path_;
  std::string flag_;
};

// "out/x.json" and "./out/x.json" are one file; writing both would leave one
// half-overwritten by the other.
bool same_file_path(const std::string& a, const std::string& b);

}  // namespace tensorwire::app
