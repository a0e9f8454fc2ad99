// Lets a backend attribute what a protocol does to the tensor transfer it does
// it for: the workload driver makes a transfer "current" while it calls a
// Rendezvous's Send or Recv for it, and a backend that measures (the
// simulator) carries that tag on every work request and copy posted meanwhile
// and makes it current again while their completions are handled. A backend
// that measures nothing leaves RankEnv::attribution null.
#pragma once

#include <cstdint>

namespace tensorwire {

// Names one transfer of a run: its step's position in WorkloadResult::steps
// and its position in that step's transfers. 0 is "no transfer".
inline uint64_t transfer_tag(uint64_t step_index, uint64_t transfer_index) {
  return ((step_index << 32) | (transfer_index & 0xffffffffu)) + 1;
}
inline uint64_t tag_step_index(uint64_t tag) { return (tag - 1) >> 32; }
inline uint64_t tag_transfer_index(uint64_t tag) { return (tag - 1) & 0xffffffffu; }

class TransferAttribution {
 public:
  virtual ~TransferAttribution() = default;
  // Makes `tag` current (0: none); returns the tag that was current.
  virtual uint64_t swap_current_transfer(uint64_t tag) = 0;
  // Transfer `tag`'s Recv is done: work posted under it from now on (a
  // protocol's queue drained from its handler) is no longer its own.
  virtual void transfer_done(uint64_t tag) = 0;
};

// Makes a transfer current for a scope (nothing when `attribution` is null).
class CurrentTransfer {
 public:
  CurrentTransfer(TransferAttribution* attribution, uint64_t tag)
      : attribution_(attribution),
        outer_(attribution == nullptr ? 0 : attribution->swap_current_transfer(tag)) {}
  ~CurrentTransfer() {
    if (attribution_ != nullptr) attribution_->swap_current_transfer(outer_);
  }
  CurrentTransfer(const CurrentTransfer&) = delete;
  CurrentTransfer& operator=(const CurrentTransfer&) = delete;

 private:
  TransferAttribution* attribution_;
  uint64_t outer_;
};

}  // namespace tensorwire
