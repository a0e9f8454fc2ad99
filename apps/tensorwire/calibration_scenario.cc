#include "apps/tensorwire/calibration_scenario.h"

#include <sstream>

#include "apps/tensorwire/calibration_fit.h"

namespace tensorwire::app {

std::string tensors_scenario_text(const std::string& name, uint32_t count, uint64_t bytes,
                                  uint32_t steps) {
  std::ostringstream o;
  o << "name = \"" << name << "\"\n"
    << "description = \"calibration: " << count << " x " << bytes << " B, rank 0 -> 1\"\n"
    << "seed = 1\n\n[run]\nmode = \"payload\"\n\n[cluster]\nnodes = 2\n\n"
    << "[workload]\nkind = \"tensors\"\nsteps = " << steps << "\n";
  for (uint32_t i = 0; i < count; ++i) {
    o << "\n[[workload.tensor]]\nname = \"t" << i << "\"\nsrc = 0\ndst = 1\n"
      << "dtype = \"uint8\"\nbytes = " << bytes << "\norder = \"same_time\"\n";
  }
  return o.str();
}

Result<double> steady_step_ns(const std::vector<double>& steps_ns, const std::string& what) {
  if (steps_ns.empty()) {
    return Status(StatusCode::kInternal, "calibrate: " + what + ": no step was measured");
  }
  if (steps_ns.size() == 1) return steps_ns.front();
  return median_of(std::vector<double>(steps_ns.begin() + 1, steps_ns.end()));
}

}  // namespace tensorwire::app
