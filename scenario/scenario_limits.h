// Bounds the loader enforces so that a scenario file, however wrong, cannot
// make the simulator overflow its clocks or counters or exhaust memory. Each
// is far above what a sensible scenario needs; scenarios/README.md lists them.
#pragma once

#include <cstdint>

#include "core/clock.h"
#include "core/tensor.h"

namespace tensorwire::scenario_limits {

inline constexpr int64_t kMinNodes = 2;
inline constexpr int64_t kMaxNodes = 1024;
inline constexpr int64_t kMaxGpusPerNode = 16;
inline constexpr int64_t kMaxSteps = 100000;
// Every transfer of every step together (each one is a Send and a Recv).
inline constexpr uint64_t kMaxTransfers = 1000000;
inline constexpr int64_t kMaxSendQueueDepth = 65536;
inline constexpr int64_t kMaxRnrRetryCount = 7;  // 3 bits in verbs; 7 = retry forever
// Rates between 1 MB/s and 100 TB/s: a 1 TiB tensor at the lowest rate still
// takes well under 2^63 ns.
inline constexpr double kMinBandwidthBytesPerS = 1e6;
inline constexpr double kMaxBandwidthBytesPerS = 1e14;
// Every duration (latency, compute, timeouts): at most one hour, so that
// kMaxSteps steps of the longest compute still fit in a signed 64-bit ns clock.
inline constexpr TimeNs kMaxDurationNs = 3600LL * 1000 * 1000 * 1000;
// One tensor's content, in any mode.
// The zero-copy protocol moves a tensor in one RDMA write of at most 2^31
// bytes (tf_verbs::kMaxTensorBytes).
inline constexpr uint64_t kMaxTensorBytes = 1ull << 31;  // 2 GiB
inline constexpr int64_t kMaxShapeDims = 32;             // dimensions of one shape
inline constexpr uint64_t kMaxStringBytes = 1ull << 20;  // each element of a string tensor
inline constexpr uint64_t kMaxStringElements = 1ull << 24;
// All elements of one string tensor with their framing, in any mode.
inline constexpr uint64_t kMaxStringTensorBytes = 1ull << 30;  // 1 GiB
// Payload mode holds real bytes: all content of one step together.
inline constexpr uint64_t kMaxPayloadStepBytes = 8ull << 30;  // 8 GiB
inline constexpr uint64_t kMaxNameBytes = 1024;  // scenario, layer and variable names
// A tensor name fits every protocol's wire format (core/tensor.h).
inline constexpr uint64_t kMaxTensorNameBytes = tensorwire::kMaxTensorNameBytes;
// A model variable's full name ("layer/variable") leaves room for the suffix
// the parameter-server workload appends to it ("/grad@w1023").
inline constexpr uint64_t kMaxVariableNameBytes = kMaxTensorNameBytes - 16;

}  // namespace tensorwire::scenario_limits
