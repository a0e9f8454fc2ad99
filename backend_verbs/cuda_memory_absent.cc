// backend_verbs/cuda_memory.h for a build without the CUDA toolkit: every
// call says so, and which option turns it on.
#include "backend_verbs/cuda_memory.h"

#include <string>

namespace tensorwire::verbs::cuda {
namespace {

Status absent(const char* what) {
  return Status(StatusCode::kUnavailable,
                std::string(what) +
                    ": this build has no CUDA support (install the CUDA toolkit under "
                    "/usr/local/cuda or $CUDA_PATH and configure with -Dcuda=enabled)");
}

}  // namespace

bool built() { return false; }
Result<uint32_t> device_count() { return absent("cudaGetDeviceCount"); }
Result<uint64_t> allocate(uint32_t, uint64_t) { return absent("cudaMalloc"); }
Status release(uint32_t, uint64_t) { return absent("cudaFree"); }
Status copy(uint64_t, uint64_t, uint64_t) { return absent("cudaMemcpy"); }
Result<DmaBufRange> export_dmabuf(uint64_t, uint64_t) {
  return absent("cuMemGetHandleForAddressRange");
}
Result<std::unique_ptr<CopyStream>> CopyStream::create(uint32_t) {
  return absent("cudaStreamCreate");
}

}  // namespace tensorwire::verbs::cuda
