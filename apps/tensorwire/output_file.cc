#include "apps/tensorwire/output_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

namespace tensorwire::app {
namespace {

Status io_error(std::string_view flag, const std::string& path, const char* what, int err) {
  return Status(StatusCode::kInvalidArgument, "cannot " + std::string(what) + " " +
                                                  std::string(flag) + " file '" + path +
                                                  "': " + std::strerror(err));
}

}  // namespace

Result<OutputFile> OutputFile::open(const std::string& path, std::string_view flag) {
  if (path.empty()) {
    return Status(StatusCode::kInvalidArgument, std::string(flag) + " needs a file name");
  }
  errno = 0;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return io_error(flag, path, "write", errno != 0 ? errno : EIO);
  return OutputFile(file, path, std::string(flag));
}

OutputFile::OutputFile(std::FILE* file, std::string path, std::string flag)
    : file_(file), path_(std::move(path)), flag_(std::move(flag)) {}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)),
      path_(std::move(other.path_)),
      flag_(std::move(other.flag_)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(other.file_, nullptr);
    path_ = std::move(other.path_);
    flag_ = std::move(other.flag_);
  }
  return *this;
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
}

Status OutputFile::write_and_close(std::string_view bytes) {
  if (file_ == nullptr) return io_error(flag_, path_, "write", EBADF);
  errno = 0;
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), file_);
  const int write_errno = errno;
  std::FILE* file = std::exchange(file_, nullptr);
  // fclose flushes: a full disk may only show up here.
  errno = 0;
  const bool closed = std::fclose(file) == 0;
  const int close_errno = errno;
  if (written != bytes.size()) return io_error(flag_, path_, "write", write_errno ? write_errno : EIO);
  if (!closed) return io_error(flag_, path_, "write", close_errno ? close_errno : EIO);
  return Status::ok();
}

bool same_file_path(const std::string& a, const std::string& b) {
  std::error_code ec_a;
  std::error_code ec_b;
  const auto canonical_a = std::filesystem::weakly_canonical(a, ec_a);
  const auto canonical_b = std::filesystem::weakly_canonical(b, ec_b);
  if (ec_a || ec_b) return a == b;
  return canonical_a == canonical_b;
}

}  // namespace tensorwire::app
