#include "runner/model_hooks.h"

#include <memory>

namespace tensorwire {
namespace {

class ForwardingScheduler final : public sim::Scheduler {
 public:
  explicit ForwardingScheduler(sim::Scheduler& to) : to_(to) {}
  size_t pick(std::span<const sim::ReadyEvent> ready) override { return to_.pick(ready); }
  void ran(const sim::ReadyEvent& event) override { to_.ran(event); }
  void used(const sim::SharedObject& object) override { to_.used(object); }
  uint32_t used_kinds() const override { return to_.used_kinds(); }
  void nic_work_on_send_queue(uint32_t rank, uint32_t peer) override {
    to_.nic_work_on_send_queue(rank, peer);
  }
  bool wants_every_event() const override { return to_.wants_every_event(); }

 private:
  sim::Scheduler& to_;
};

}  // namespace

void attach_model_hooks(sim::Simulator& simulator, const SimulationOptions& options) {
  if (options.scheduler != nullptr) {
    simulator.set_scheduler(std::make_unique<ForwardingScheduler>(*options.scheduler));
  }
  if (options.observer != nullptr) simulator.set_observer(options.observer);
  if (options.on_attached) options.on_attached(simulator);
}

void run_until_idle(sim::Simulator& simulator) { simulator.run(); }

}  // namespace tensorwire
