#include "report/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>

namespace tensorwire::report {

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

ProgressBar::ProgressBar(std::ostream& out, bool enabled, size_t redraw_every_steps,
                         std::string unit)
    : out_(out),
      enabled_(enabled),
      redraw_every_steps_(redraw_every_steps),
      unit_(std::move(unit)) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(size_t steps_done, size_t steps_total) {
  if (!enabled_ || steps_total == 0) return;
  const size_t every =
      redraw_every_steps_ > 0 ? redraw_every_steps_ : std::max<size_t>(1, steps_total / 100);
  const bool last = steps_done >= steps_total;
  if (drawn_ && !last && steps_done < last_drawn_steps_ + every) return;
  if (drawn_ && steps_done == last_drawn_steps_) return;
  draw(steps_done, steps_total);
}

void ProgressBar::draw(size_t steps_done, size_t steps_total) {
  constexpr size_t kBarWidth = 30;
  const size_t done = std::min(steps_done, steps_total);
  const size_t filled = done * kBarWidth / steps_total;
  std::string line = "\r[" + std::string(filled, '#') + std::string(kBarWidth - filled, ' ') +
                     "] " + std::to_string(done) + "/" + std::to_string(steps_total) + " " + unit_;
  const size_t width = line.size() - 1;
  // Overwrite what a longer previous line left behind.
  if (width < last_width_) line += std::string(last_width_ - width, ' ');
  out_ << line << std::flush;
  last_width_ = std::max(width, last_width_);
  last_drawn_steps_ = steps_done;
  drawn_ = true;
  ++redraws_;
}

void ProgressBar::finish() {
  if (!enabled_ || !drawn_) return;
  out_ << '\r' << std::string(last_width_, ' ') << '\r' << std::flush;
  drawn_ = false;
  last_width_ = 0;
}

}  // namespace tensorwire::report
