// One rank's share of an RDMA device: the device context, a protection domain,
// one completion queue for all of the rank's queue pairs (optionally with a
// completion channel), and the limits the queue pairs are sized by.
//
// Like rc_pingpong's context struct, it owns what it creates and destroys it
// in reverse order. Each rank gets its own protection domain even when
// several ranks share a device in one process (tests do): an rkey is then
// valid only on the queue pairs of the rank that handed it out, as between
// separate machines.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tensorwire::verbs {

struct VerbsDeviceOptions {
  // Completion queue entries wanted; clamped to the device's max_cqe (the NIC
  // then refuses work beyond what the queue holds, see VerbsNic).
  uint32_t completion_queue_entries = 1024;
  // false: the owner busy-polls the CQ. true: it may sleep in
  // ibv_get_cq_event between completions (wait_for_completion_event).
  bool use_completion_channel = false;
  // Inline data wanted per send work request; the device may grant less.
  uint32_t wanted_inline_bytes = 256;
};

// What the queue pairs are sized by. max_inline_data is what creating a real
// RC queue pair granted, because ibv_device_attr does not report it.
struct DeviceLimits {
  uint32_t max_qp_wr = 0;
  uint32_t max_cqe = 0;
  uint32_t max_qp_rd_atom = 0;       // RDMA reads a QP serves at once (responder)
  uint32_t max_qp_init_rd_atom = 0;  // RDMA reads a QP has in flight (initiator)
  uint64_t max_mr_size = 0;
  uint32_t max_inline_data = 0;
};

class VerbsDevice {
 public:
  // Names of the devices ibv_get_device_list sees, in its order.
  static Result<std::vector<std::string>> device_names();

  // Opens `name` and closes it again: kOk when the device exists and opens.
  // The message of an error lists the devices there are.
  static Status check_openable(std::string_view name);

  // Resources on a context someone else opened and keeps open (librdmacm's,
  // from a cm_id's ->verbs). `context` must outlive the VerbsDevice.
  static Result<std::unique_ptr<VerbsDevice>> attach(ibv_context* context,
                                                     const VerbsDeviceOptions& options);

  // Opens the device by name (ibv_get_device_list + ibv_open_device) and
  // closes it when destroyed.
  static Result<std::unique_ptr<VerbsDevice>> open(std::string_view name,
                                                   const VerbsDeviceOptions& options);

  ~VerbsDevice();
  VerbsDevice(const VerbsDevice&) = delete;
  VerbsDevice& operator=(const VerbsDevice&) = delete;

  const std::string& name() const { return name_; }
  ibv_context* context() const { return context_; }
  ibv_pd* protection_domain() const { return pd_; }
  ibv_cq* completion_queue() const { return cq_; }
  // Entries the CQ really holds (cq->cqe: at least what was asked, up to max_cqe).
  uint32_t completion_queue_capacity() const;
  const DeviceLimits& limits() const { return limits_; }
  bool uses_completion_channel() const { return channel_ != nullptr; }

  // Completion channel only. The order that loses no wake-up: arm the CQ,
  // poll it once more (a completion that came before arming raises no
  // event), and only if that finds nothing, wait. *signalled tells an event
  // from the timeout. Events are acknowledged as they are read. The wait also
  // ends when one of `also_wake_on` (descriptors of the caller's, e.g. the
  // coordinator's sockets) becomes readable; *other_ready says so.
  Status arm_completion_queue();
  Status wait_for_completion_event(int timeout_ms, std::span<const int> also_wake_on,
                                   bool* signalled, bool* other_ready);

  // Reads every pending asynchronous event (QP fatal, port down, ...) without
  // blocking, hands each to `handler`, and acknowledges it.
  Status drain_async_events(const std::function<void(const ibv_async_event&)>& handler);

 private:
  VerbsDevice() = default;
  Status create_resources(ibv_context* context, const VerbsDeviceOptions& options);
  Status probe_max_inline_data(uint32_t wanted);

  std::string name_;
  ibv_context* context_ = nullptr;
  bool owns_context_ = false;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  DeviceLimits limits_;
};

}  // namespace tensorwire::verbs
