// Options of the MVAPICH2-GPU protocol, set from a scenario's
// [protocol.mvapich2_gpu] table, and its bug zoo.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/channel_peers.h"

namespace tensorwire::mvapich2 {

// How a GPU buffer the NIC cannot reach is staged through host memory.
enum class Staging : uint8_t {
  // The paper's baseline: the whole buffer to the host, one rendezvous, the
  // whole buffer up to the GPU at the end.
  kNaive,
  // MVAPICH2-GPU: block by block, so the device-to-host copy of block k+1,
  // the RDMA write of block k and the receiver's host-to-device copy of block
  // k-1 overlap.
  kPipelined,
};
const char* staging_name(Staging s);
bool staging_from_name(std::string_view name, Staging& s);

// Deliberate bugs for the model checker's bug zoo (tests/model): each breaks
// a rule the pipeline depends on, switched on at run time. kNone elsewhere.
enum class PlantedBug : uint8_t {
  kNone,
  // The sender gives a block's vbuf back to its pool when the RDMA write
  // from it is posted, not when it completes: the next block's
  // device-to-host copy overwrites bytes the NIC is still sending.
  kVbufReuseAtWritePost,
  // The sender sends a block's FIN ("RDMA write finished") when it posts
  // the write, not when the write completes: the receiver may copy the vbuf
  // out (and hand it back) before the data is there, and on an error the
  // FIN vouches for bytes that never arrived.
  kFinBeforeWriteCompletion,
};

const char* planted_bug_name(PlantedBug bug);
// "vbuf_reuse_at_write_post", ...; false for an unknown name.
bool planted_bug_from_name(std::string_view name, PlantedBug& bug);
inline constexpr PlantedBug kPlantedBugs[] = {PlantedBug::kVbufReuseAtWritePost,
                                              PlantedBug::kFinBeforeWriteCompletion};

// Bounds a scenario may ask for.
inline constexpr int64_t kMinReceivePoolSize = 4;  // two data credits + two for credit messages
inline constexpr int64_t kMaxReceivePoolSize = 4096;
inline constexpr uint64_t kMaxEagerBytes = 64 * 1024;
inline constexpr uint64_t kMinBlockBytes = 64;
inline constexpr uint64_t kMaxBlockBytes = uint64_t{1} << 30;
// A CTS lists at most this many vbufs, so it fits a control message slot.
inline constexpr int64_t kMaxVbufCount = 64;

struct Mv2Options {
  Staging staging = Staging::kPipelined;
  // Tensors of at most this many bytes travel in the message itself (the
  // eager path: one message, no rendezvous, no registration). MVAPICH2's
  // eager threshold (MV2_IBA_EAGER_THRESHOLD) depends on the HCA; 8 KiB is
  // assumed here.
  uint64_t eager_max_bytes = 8 * 1024;
  // The pipeline unit. MVAPICH2 2.3's user guide: MV2_CUDA_BLOCK_SIZE,
  // default 262144 (256 KiB).
  uint64_t block_bytes = 256 * 1024;
  // Host vbufs of block_bytes each, per peer and direction, that blocks are
  // staged in. MVAPICH2's MV2_CUDA_NUM_RNDV_BLOCKS, default 8 (its MPI_T
  // control-variable list).
  uint32_t vbuf_count = 8;
  // Control-message receives posted in advance per peer.
  uint32_t receive_pool_size = 64;
  // Which peers a rank opens a channel to at start (core/channel_peers.h):
  // only the ranks the workload pairs it with, so memory grows with the
  // traffic; "all" keeps the original's channel to every rank.
  ChannelScope channels = ChannelScope::kWorkloadPeers;
  PlantedBug planted_bug = PlantedBug::kNone;
};

}  // namespace tensorwire::mvapich2
