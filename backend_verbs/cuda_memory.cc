// backend_verbs/cuda_memory.h on the CUDA runtime (linked statically).
#include "backend_verbs/cuda_memory.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace tensorwire::verbs::cuda {
namespace {

Status failed(const std::string& call, cudaError_t error) {
  const StatusCode code = error == cudaErrorMemoryAllocation ? StatusCode::kOutOfMemory
                          : (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver)
                              ? StatusCode::kUnavailable
                              : StatusCode::kInternal;
  return Status(code, call + ": " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

uint64_t page_bytes() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

uint64_t round_up(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

Status set_device(uint32_t device) {
  if (cudaError_t e = cudaSetDevice(static_cast<int>(device)); e != cudaSuccess) {
    return failed("cudaSetDevice(" + std::to_string(device) + ")", e);
  }
  return {};
}

// cudaMalloc aligns to 256 bytes, not to pages; a dmabuf export needs a
// page-aligned range inside one allocation, so each allocation gets a spare
// page and hands out its first page-aligned address. The base is kept here
// for cudaFree (ranks may be threads of one process, hence the lock).
std::mutex bases_mutex;
std::map<uint64_t, uint64_t>& bases() {
  static std::map<uint64_t, uint64_t> by_aligned;
  return by_aligned;
}

}  // namespace

bool built() { return true; }

Result<uint32_t> device_count() {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    return failed("cudaGetDeviceCount", e);
  }
  if (count <= 0) return Status(StatusCode::kUnavailable, "cudaGetDeviceCount: no CUDA GPU");
  return static_cast<uint32_t>(count);
}

Result<uint64_t> allocate(uint32_t device, uint64_t bytes) {
  if (Status st = set_device(device); !st.is_ok()) return st;
  const uint64_t page = page_bytes();
  const uint64_t size = round_up(bytes == 0 ? 1 : bytes, page) + page;
  void* base = nullptr;
  if (cudaError_t e = cudaMalloc(&base, size); e != cudaSuccess) {
    return failed("cudaMalloc(" + std::to_string(size) + " bytes on GPU " + std::to_string(device) + ")", e);
  }
  const uint64_t aligned = round_up(reinterpret_cast<uint64_t>(base), page);
  std::lock_guard<std::mutex> lock(bases_mutex);
  bases()[aligned] = reinterpret_cast<uint64_t>(base);
  return aligned;
}

Status release(uint32_t device, uint64_t addr) {
  uint64_t base = 0;
  {
    std::lock_guard<std::mutex> lock(bases_mutex);
    auto it = bases().find(addr);
    if (it == bases().end()) {
      return Status(StatusCode::kNotFound, "cudaFree: no device allocation starts at " + std::to_string(addr));
    }
    base = it->second;
    bases().erase(it);
  }
  if (Status st = set_device(device); !st.is_ok()) return st;
  if (cudaError_t e = cudaFree(reinterpret_cast<void*>(base)); e != cudaSuccess) {
    return failed("cudaFree", e);
  }
  return {};
}

Status copy(uint64_t dst, uint64_t src, uint64_t bytes) {
  if (bytes == 0) return {};
  if (cudaError_t e = cudaMemcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes,
                                 cudaMemcpyDefault);
      e != cudaSuccess) {
    return failed("cudaMemcpy(" + std::to_string(bytes) + " bytes)", e);
  }
  return {};
}

Result<DmaBufRange> export_dmabuf(uint64_t addr, uint64_t length) {
  using GetHandle = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType, unsigned long long);
  static GetHandle get_handle = nullptr;
  static cudaError_t lookup = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &fn, 11070,
                                                     cudaEnableDefault, &found);
    if (e == cudaSuccess && found != cudaDriverEntryPointSuccess) e = cudaErrorSymbolNotFound;
    get_handle = reinterpret_cast<GetHandle>(fn);
    return e;
  }();
  if (lookup != cudaSuccess || get_handle == nullptr) {
    return failed("cudaGetDriverEntryPointByVersion(cuMemGetHandleForAddressRange)", lookup);
  }
  const uint64_t page = page_bytes();
  const uint64_t start = addr / page * page;
  const uint64_t end = round_up(addr + (length == 0 ? 1 : length), page);
  int fd = -1;
  const CUresult r = get_handle(&fd, static_cast<CUdeviceptr>(start), end - start,
                                CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS) {
    return Status(StatusCode::kUnavailable,
                  "cuMemGetHandleForAddressRange(DMA_BUF_FD, " + std::to_string(end - start) +
                      " bytes): CUresult " + std::to_string(static_cast<int>(r)) +
                      " (the driver or the GPU does not export dmabufs)");
  }
  return DmaBufRange{fd, addr - start};
}

namespace {

class RuntimeCopyStream final : public CopyStream {
 public:
  RuntimeCopyStream(uint32_t device, cudaStream_t stream) : device_(device), stream_(stream) {}
  ~RuntimeCopyStream() override {
    if (set_device(device_).is_ok()) cudaStreamSynchronize(stream_);
    for (auto& [token, event] : in_flight_) cudaEventDestroy(event);
    cudaStreamDestroy(stream_);
  }

  Status submit(uint64_t dst, uint64_t src, uint64_t bytes, uint64_t token) override {
    if (Status st = set_device(device_); !st.is_ok()) return st;
    if (cudaError_t e = cudaMemcpyAsync(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src),
                                        bytes, cudaMemcpyDefault, stream_);
        e != cudaSuccess) {
      return failed("cudaMemcpyAsync(" + std::to_string(bytes) + " bytes)", e);
    }
    cudaEvent_t event = nullptr;
    if (cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming); e != cudaSuccess) {
      return failed("cudaEventCreateWithFlags", e);
    }
    if (cudaError_t e = cudaEventRecord(event, stream_); e != cudaSuccess) {
      cudaEventDestroy(event);
      return failed("cudaEventRecord", e);
    }
    in_flight_.emplace_back(token, event);
    return {};
  }

  Result<std::vector<uint64_t>> poll() override {
    std::vector<uint64_t> done;
    while (!in_flight_.empty()) {
      const cudaError_t e = cudaEventQuery(in_flight_.front().second);
      if (e == cudaErrorNotReady) break;
      cudaEventDestroy(in_flight_.front().second);
      const uint64_t token = in_flight_.front().first;
      in_flight_.pop_front();
      if (e != cudaSuccess) return failed("cudaEventQuery (a copy on the stream)", e);
      done.push_back(token);
    }
    return done;
  }

  size_t pending() const override { return in_flight_.size(); }

 private:
  uint32_t device_;
  cudaStream_t stream_;
  std::deque<std::pair<uint64_t, cudaEvent_t>> in_flight_;
};

}  // namespace

Result<std::unique_ptr<CopyStream>> CopyStream::create(uint32_t device) {
  if (Status st = set_device(device); !st.is_ok()) return st;
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return failed("cudaStreamCreateWithFlags(GPU " + std::to_string(device) + ")", e);
  }
  return std::unique_ptr<CopyStream>(std::make_unique<RuntimeCopyStream>(device, stream));
}

}  // namespace tensorwire::verbs::cuda
