#include "backend_verbs/verbs_device.h"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "launch/system_call_error.h"

namespace tensorwire::verbs {
namespace {

std::string joined(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

Status set_nonblocking(int fd, const std::string& what) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0) return launch::call_failed("fcntl(F_GETFL, " + what + ")", errno);
  if (fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return launch::call_failed("fcntl(F_SETFL O_NONBLOCK, " + what + ")", errno);
  }
  return {};
}

// The device list, freed when this goes out of scope.
struct DeviceList {
  ibv_device** devices = nullptr;
  int count = 0;
  ~DeviceList() {
    if (devices != nullptr) ibv_free_device_list(devices);
  }
};

Status get_device_list(DeviceList* list) {
  errno = 0;
  list->devices = ibv_get_device_list(&list->count);
  if (list->devices == nullptr) {
    const int error = errno != 0 ? errno : ENODEV;
    Status st = launch::call_failed(StatusCode::kUnavailable, "ibv_get_device_list", error);
    if (error == ENOSYS) {
      return Status(st.code(), st.message() + " (this kernel has no RDMA support)");
    }
    return st;
  }
  return {};
}

// Opens the device called `name`; the caller closes the context. The error
// lists the devices there are when none has that name.
Result<ibv_context*> open_named_device(std::string_view name) {
  DeviceList list;
  if (Status st = get_device_list(&list); !st.is_ok()) return st;
  std::vector<std::string> names;
  for (int i = 0; i < list.count; ++i) {
    names.emplace_back(ibv_get_device_name(list.devices[i]));
    if (names.back() != name) continue;
    ibv_context* context = ibv_open_device(list.devices[i]);
    if (context == nullptr) {
      return launch::call_failed(StatusCode::kUnavailable, "ibv_open_device(" + names.back() + ")", errno);
    }
    return context;
  }
  return Status(StatusCode::kUnavailable, "no RDMA device named '" + std::string(name) +
                                              "' (devices here: " + joined(names) + ")");
}

}  // namespace

Result<std::vector<std::string>> VerbsDevice::device_names() {
  DeviceList list;
  if (Status st = get_device_list(&list); !st.is_ok()) return st;
  std::vector<std::string> names;
  for (int i = 0; i < list.count; ++i) names.emplace_back(ibv_get_device_name(list.devices[i]));
  return names;
}

Status VerbsDevice::check_openable(std::string_view name) {
  Result<ibv_context*> context = open_named_device(name);
  if (!context) return context.status();
  if (const int rc = ibv_close_device(*context); rc != 0) {
    return launch::call_failed("ibv_close_device(" + std::string(name) + ")", errno);
  }
  return {};
}

Result<std::unique_ptr<VerbsDevice>> VerbsDevice::attach(ibv_context* context,
                                                         const VerbsDeviceOptions& options) {
  if (context == nullptr) {
    return Status(StatusCode::kInvalidArgument, "VerbsDevice::attach: no device context");
  }
  std::unique_ptr<VerbsDevice> device(new VerbsDevice());
  device->name_ = ibv_get_device_name(context->device);
  if (Status st = device->create_resources(context, options); !st.is_ok()) return st;
  return device;
}

Result<std::unique_ptr<VerbsDevice>> VerbsDevice::open(std::string_view name,
                                                       const VerbsDeviceOptions& options) {
  Result<ibv_context*> context = open_named_device(name);
  if (!context) return context.status();
  std::unique_ptr<VerbsDevice> device(new VerbsDevice());
  device->name_ = std::string(name);
  device->context_ = *context;  // closed by the destructor from here on
  device->owns_context_ = true;
  if (Status st = device->create_resources(*context, options); !st.is_ok()) return st;
  return device;
}

Status VerbsDevice::create_resources(ibv_context* context, const VerbsDeviceOptions& options) {
  context_ = context;
  ibv_device_attr attr{};
  if (const int rc = ibv_query_device(context_, &attr); rc != 0) {
    return launch::call_failed("ibv_query_device(" + name_ + ")", rc);
  }
  limits_.max_qp_wr = static_cast<uint32_t>(std::max(attr.max_qp_wr, 0));
  limits_.max_cqe = static_cast<uint32_t>(std::max(attr.max_cqe, 0));
  limits_.max_qp_rd_atom = static_cast<uint32_t>(std::max(attr.max_qp_rd_atom, 0));
  limits_.max_qp_init_rd_atom = static_cast<uint32_t>(std::max(attr.max_qp_init_rd_atom, 0));
  limits_.max_mr_size = attr.max_mr_size;

  pd_ = ibv_alloc_pd(context_);
  if (pd_ == nullptr) return launch::call_failed("ibv_alloc_pd(" + name_ + ")", errno);

  if (options.use_completion_channel) {
    channel_ = ibv_create_comp_channel(context_);
    if (channel_ == nullptr) return launch::call_failed("ibv_create_comp_channel(" + name_ + ")", errno);
    // poll() decides when to wait; ibv_get_cq_event must never block after it.
    if (Status st = set_nonblocking(channel_->fd, "completion channel of " + name_); !st.is_ok()) {
      return st;
    }
  }

  const uint32_t wanted = std::max<uint32_t>(options.completion_queue_entries, 1);
  const uint32_t entries = limits_.max_cqe > 0 ? std::min(wanted, limits_.max_cqe) : wanted;
  cq_ = ibv_create_cq(context_, static_cast<int>(entries), nullptr, channel_, 0);
  if (cq_ == nullptr) {
    return launch::call_failed("ibv_create_cq(" + name_ + ", " + std::to_string(entries) + " entries)",
                       errno);
  }

  // Asynchronous events are drained from the progress loop, never waited for.
  if (Status st = set_nonblocking(context_->async_fd, "async event fd of " + name_); !st.is_ok()) {
    return st;
  }
  return probe_max_inline_data(options.wanted_inline_bytes);
}

// ibv_device_attr has no inline limit; the only way to learn it is to ask for
// an RC queue pair with some and see what the provider grants (and whether it
// refuses). Halve until it accepts.
Status VerbsDevice::probe_max_inline_data(uint32_t wanted) {
  for (uint32_t ask = wanted;; ask /= 2) {
    ibv_qp_init_attr attr{};
    attr.send_cq = cq_;
    attr.recv_cq = cq_;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = 1;
    attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = ask;
    ibv_qp* qp = ibv_create_qp(pd_, &attr);
    if (qp != nullptr) {
      // A provider may round up; the option caps what is used.
      limits_.max_inline_data = std::min(attr.cap.max_inline_data, wanted);
      if (const int rc = ibv_destroy_qp(qp); rc != 0) {
        return launch::call_failed("ibv_destroy_qp(" + name_ + ", inline probe)", rc);
      }
      return {};
    }
    if (ask == 0) {
      return launch::call_failed("ibv_create_qp(" + name_ + ", RC queue pair probing max_inline_data)",
                         errno);
    }
  }
}

uint32_t VerbsDevice::completion_queue_capacity() const {
  return cq_ != nullptr && cq_->cqe > 0 ? static_cast<uint32_t>(cq_->cqe) : 0;
}

Status VerbsDevice::arm_completion_queue() {
  if (channel_ == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "arm_completion_queue: " + name_ + " was set up without a completion channel");
  }
  if (const int rc = ibv_req_notify_cq(cq_, 0); rc != 0) {
    return launch::call_failed("ibv_req_notify_cq(" + name_ + ")", rc);
  }
  return {};
}

Status VerbsDevice::wait_for_completion_event(int timeout_ms, std::span<const int> also_wake_on,
                                              bool* signalled, bool* other_ready) {
  *signalled = false;
  *other_ready = false;
  if (channel_ == nullptr) {
    return Status(StatusCode::kInvalidArgument, "wait_for_completion_event: " + name_ +
                                                    " was set up without a completion channel");
  }
  std::vector<pollfd> fds;
  fds.reserve(1 + also_wake_on.size());
  fds.push_back(pollfd{channel_->fd, POLLIN, 0});
  for (int fd : also_wake_on) fds.push_back(pollfd{fd, POLLIN, 0});
  const int n = poll(fds.data(), fds.size(), std::max(timeout_ms, 0));
  if (n < 0) {
    if (errno == EINTR) return {};
    return launch::call_failed("poll(completion channel of " + name_ + ")", errno);
  }
  if (n == 0) return {};
  // Readable, closed or in error: the caller's own read will tell which.
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents != 0) *other_ready = true;
  }
  if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0 && (fds[0].revents & POLLIN) == 0) {
    return Status(StatusCode::kInternal, "poll(completion channel of " + name_ +
                                             "): the channel reported an error (revents " +
                                             std::to_string(fds[0].revents) + ")");
  }
  if ((fds[0].revents & POLLIN) == 0) return {};
  ibv_cq* cq = nullptr;
  void* cq_context = nullptr;
  if (ibv_get_cq_event(channel_, &cq, &cq_context) != 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
    return launch::call_failed("ibv_get_cq_event(" + name_ + ")", errno);
  }
  // Acknowledged at once: ibv_destroy_cq waits for every event it reported.
  ibv_ack_cq_events(cq, 1);
  *signalled = true;
  return {};
}

Status VerbsDevice::drain_async_events(const std::function<void(const ibv_async_event&)>& handler) {
  for (;;) {
    ibv_async_event event{};
    if (ibv_get_async_event(context_, &event) != 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
      return launch::call_failed("ibv_get_async_event(" + name_ + ")", errno);
    }
    handler(event);
    ibv_ack_async_event(&event);
  }
}

VerbsDevice::~VerbsDevice() {
  if (cq_ != nullptr) {
    if (const int rc = ibv_destroy_cq(cq_); rc != 0) {
      launch::report_teardown_failure("ibv_destroy_cq(" + name_ + ")", rc);
    }
  }
  if (channel_ != nullptr) {
    if (const int rc = ibv_destroy_comp_channel(channel_); rc != 0) {
      launch::report_teardown_failure("ibv_destroy_comp_channel(" + name_ + ")", rc);
    }
  }
  if (pd_ != nullptr) {
    if (const int rc = ibv_dealloc_pd(pd_); rc != 0) {
      launch::report_teardown_failure("ibv_dealloc_pd(" + name_ + ")", rc);
    }
  }
  if (owns_context_ && context_ != nullptr) {
    if (ibv_close_device(context_) != 0) {
      launch::report_teardown_failure("ibv_close_device(" + name_ + ")", errno);
    }
  }
}

}  // namespace tensorwire::verbs
