#include "apps/tensorwire/output_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

namespace tensorwire::app {
namespace {

namespace fs = std::filesystem;

Status io_error(std::string_view flag, const std::string& path, const char* what, int err) {
  return Status(StatusCode::kInvalidArgument, "cannot " + std::string(what) + " " +
                                                  std::string(flag) + " file '" + path +
                                                  "': " + std::strerror(err));
}

// The nearest existing ancestor of `dir` when it is not a directory (so the
// error can name it); empty otherwise.
std::string blocking_ancestor(const fs::path& dir) {
  std::error_code ec;
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    const fs::file_status s = fs::status(p, ec);
    if (fs::exists(s)) return fs::is_directory(s) ? "" : p.string();
    if (p == p.parent_path()) break;
  }
  return "";
}

// Creates the missing parent directories of `path`.
Status create_parent_directories(const std::string& path, std::string_view flag) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return Status::ok();
  if (std::string blocker = blocking_ancestor(parent); !blocker.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "cannot create the directory '" + parent.string() + "' for " +
                      std::string(flag) + " file '" + path + "': '" + blocker +
                      "' is not a directory");
  }
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) {
    return Status(StatusCode::kInvalidArgument, "cannot create the directory '" +
                                                    parent.string() + "' for " +
                                                    std::string(flag) + " file '" + path +
                                                    "': " + ec.message());
  }
  return Status::ok();
}

// "<path>.tmp-<pid>-<n>": beside the target, so the rename stays on one filesystem.
std::string temporary_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

Result<OutputFile> OutputFile::open(const std::string& path, std::string_view flag) {
  if (path.empty()) {
    return Status(StatusCode::kInvalidArgument, std::string(flag) + " needs a file name");
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) return io_error(flag, path, "write", EISDIR);
  if (Status st = create_parent_directories(path, flag); !st.is_ok()) return st;
  const std::string temporary = temporary_name(path);
  errno = 0;
  // "x": never clobber a file of that name that someone else made.
  std::FILE* file = std::fopen(temporary.c_str(), "wbx");
  if (file == nullptr) return io_error(flag, path, "write", errno != 0 ? errno : EIO);
  return OutputFile(file, path, temporary, std::string(flag));
}

OutputFile::OutputFile(std::FILE* file, std::string path, std::string temporary_path,
                       std::string flag)
    : file_(file),
      path_(std::move(path)),
      temporary_path_(std::move(temporary_path)),
      flag_(std::move(flag)) {}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)),
      path_(std::move(other.path_)),
      temporary_path_(std::move(other.temporary_path_)),
      flag_(std::move(other.flag_)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    discard();
    file_ = std::exchange(other.file_, nullptr);
    path_ = std::move(other.path_);
    temporary_path_ = std::move(other.temporary_path_);
    flag_ = std::move(other.flag_);
  }
  return *this;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (file_ == nullptr) return;
  std::fclose(std::exchange(file_, nullptr));
  std::remove(temporary_path_.c_str());
}

Status OutputFile::write_and_close(std::string_view bytes) {
  if (file_ == nullptr) return io_error(flag_, path_, "write", EBADF);
  errno = 0;
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), file_);
  int error = written == bytes.size() ? 0 : (errno != 0 ? errno : EIO);
  std::FILE* file = std::exchange(file_, nullptr);
  // fclose flushes: a full disk may only show up here.
  errno = 0;
  if (std::fclose(file) != 0 && error == 0) error = errno != 0 ? errno : EIO;
  errno = 0;
  if (error == 0 && std::rename(temporary_path_.c_str(), path_.c_str()) != 0) {
    error = errno != 0 ? errno : EIO;
  }
  if (error != 0) {
    std::remove(temporary_path_.c_str());
    return io_error(flag_, path_, "write", error);
  }
  return Status::ok();
}

Status write_file_atomically(const std::string& path, std::string_view bytes,
                             std::string_view flag) {
  Result<OutputFile> file = OutputFile::open(path, flag);
  if (!file) return file.status();
  return file->write_and_close(bytes);
}

bool same_file_path(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  std::error_code ec_a;
  std::error_code ec_b;
  const auto canonical_a = fs::weakly_canonical(a, ec_a);
  const auto canonical_b = fs::weakly_canonical(b, ec_b);
  if (ec_a || ec_b) return a == b;
  return canonical_a == canonical_b;
}

Status refuse_overwriting_input(const std::string& path, std::string_view flag,
                                const std::string& input, std::string_view what) {
  if (path.empty() || input.empty() || !same_file_path(path, input)) return Status::ok();
  return Status(StatusCode::kInvalidArgument, std::string(flag) + " would overwrite the " +
                                                  std::string(what) + " '" + input + "'");
}

std::string run_output_paths_problem(const std::string& json_path, const std::string& trace_path,
                                     const std::string& scenario_path) {
  for (auto [path, flag] : {std::pair{&json_path, "--json"}, std::pair{&trace_path, "--trace"}}) {
    if (Status st = refuse_overwriting_input(*path, flag, scenario_path, "scenario file");
        !st.is_ok()) {
      return st.message();
    }
  }
  if (!trace_path.empty() && !json_path.empty() && same_file_path(trace_path, json_path)) {
    return "--trace and --json name the same file '" + trace_path + "'";
  }
  return "";
}

}  // namespace tensorwire::app
