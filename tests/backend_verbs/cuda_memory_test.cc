// backend_verbs/cuda_memory.h: device allocations, copies, dmabuf export and
// the copy stream. The GPU tests skip, saying why, where no CUDA GPU is usable
// (no toolkit at build time, no driver, no device); the rest run everywhere.
#include "backend_verbs/cuda_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

namespace tensorwire::verbs {
namespace {

#define TENSORWIRE_SKIP_WITHOUT_GPU()                                             \
  do {                                                                            \
    Result<uint32_t> gpus = cuda::device_count();                                 \
    if (!gpus) GTEST_SKIP() << "no CUDA GPU: " << gpus.status().to_string();      \
  } while (0)

uint64_t addr_of(const std::vector<std::byte>& v) { return reinterpret_cast<uint64_t>(v.data()); }

std::vector<std::byte> pattern(size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return v;
}

TEST(CudaMemory, BuildMatchesTheMesonOption) {
  EXPECT_EQ(cuda::built(), TENSORWIRE_CUDA_BUILT != 0);
}

TEST(CudaMemory, WithoutAGpuEveryCallSaysWhichCallAndWhy) {
  if (cuda::device_count()) GTEST_SKIP() << "a CUDA GPU is present: the GPU tests below cover it";
  const Status count = cuda::device_count().status();
  EXPECT_NE(count.message().find("cudaGetDeviceCount"), std::string::npos) << count.to_string();
  const Result<uint64_t> memory = cuda::allocate(0, 4096);
  ASSERT_FALSE(memory.is_ok());
  EXPECT_NE(memory.status().message().find("cuda"), std::string::npos) << memory.status().to_string();
  EXPECT_FALSE(cuda::CopyStream::create(0).is_ok());
  EXPECT_FALSE(cuda::export_dmabuf(0x200000, 4096).is_ok());
}

TEST(CudaMemory, DeviceAllocationsArePageAlignedAndRoundTripBytes) {
  TENSORWIRE_SKIP_WITHOUT_GPU();
  const size_t n = 10000;
  Result<uint64_t> device = cuda::allocate(0, n);
  ASSERT_TRUE(device.is_ok()) << device.status().to_string();
  EXPECT_EQ(*device % static_cast<uint64_t>(sysconf(_SC_PAGESIZE)), 0u);
  const std::vector<std::byte> sent = pattern(n, 7);
  std::vector<std::byte> back(n);
  ASSERT_TRUE(cuda::copy(*device, addr_of(sent), n).is_ok());
  ASSERT_TRUE(cuda::copy(addr_of(back), *device, n).is_ok());
  EXPECT_EQ(back, sent);
  EXPECT_TRUE(cuda::release(0, *device).is_ok());
  EXPECT_EQ(cuda::release(0, *device).code(), StatusCode::kNotFound) << "a second free is refused";
}

TEST(CudaMemory, CopyStreamFinishesCopiesInSubmissionOrder) {
  TENSORWIRE_SKIP_WITHOUT_GPU();
  const size_t n = 1 << 20;
  Result<uint64_t> device = cuda::allocate(0, n);
  ASSERT_TRUE(device.is_ok()) << device.status().to_string();
  Result<std::unique_ptr<cuda::CopyStream>> stream = cuda::CopyStream::create(0);
  ASSERT_TRUE(stream.is_ok()) << stream.status().to_string();
  const std::vector<std::byte> sent = pattern(n, 3);
  std::vector<std::byte> back(n);
  ASSERT_TRUE((*stream)->submit(*device, addr_of(sent), n, 11).is_ok());
  ASSERT_TRUE((*stream)->submit(addr_of(back), *device, n / 2, 12).is_ok());
  ASSERT_TRUE((*stream)->submit(addr_of(back) + n / 2, *device + n / 2, n / 2, 13).is_ok());
  std::vector<uint64_t> done;
  while ((*stream)->pending() > 0) {
    Result<std::vector<uint64_t>> finished = (*stream)->poll();
    ASSERT_TRUE(finished.is_ok()) << finished.status().to_string();
    done.insert(done.end(), finished->begin(), finished->end());
  }
  EXPECT_EQ(done, (std::vector<uint64_t>{11, 12, 13}));
  EXPECT_EQ(back, sent);
  EXPECT_TRUE(cuda::release(0, *device).is_ok());
}

TEST(CudaMemory, DmaBufExportCoversTheRangeOrNamesTheDriverCall) {
  TENSORWIRE_SKIP_WITHOUT_GPU();
  Result<uint64_t> device = cuda::allocate(0, 3 * 4096);
  ASSERT_TRUE(device.is_ok()) << device.status().to_string();
  Result<cuda::DmaBufRange> dmabuf = cuda::export_dmabuf(*device + 100, 5000);
  if (dmabuf.is_ok()) {
    EXPECT_GE(dmabuf->fd, 0);
    EXPECT_EQ(dmabuf->offset, 100u);
    close(dmabuf->fd);
  } else {
    // Drivers without dmabuf export (before 515, or open-source modules off)
    // say so; GPUDirect registration then falls back to nvidia-peermem.
    EXPECT_NE(dmabuf.status().message().find("cuMemGetHandleForAddressRange"), std::string::npos)
        << dmabuf.status().to_string();
  }
  EXPECT_TRUE(cuda::release(0, *device).is_ok());
}

}  // namespace
}  // namespace tensorwire::verbs
