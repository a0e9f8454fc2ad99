#include "scenario/text_file.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace tensorwire {

Result<std::string> read_text_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    return Status(StatusCode::kNotFound, "no such file");
  }
  if (fs::is_directory(status)) {
    return Status(StatusCode::kInvalidArgument, "is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kInvalidArgument, "cannot be opened for reading");
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxScenarioFileBytes) {
      return Status(StatusCode::kInvalidArgument, "larger than " +
                                                      std::to_string(kMaxScenarioFileBytes >> 20) +
                                                      " MiB; not a scenario file");
    }
  }
  if (in.bad()) return Status(StatusCode::kInvalidArgument, "read error");
  return text;
}

}  // namespace tensorwire
