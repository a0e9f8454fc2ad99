// A one-line progress bar for long runs, drawn on a terminal only: when stderr
// is a file or a pipe the bar writes nothing, so logs and CI output stay clean.
// Whether to draw is decided by the caller (stderr_is_terminal()), so tests
// can force either way.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

namespace tensorwire::report {

// isatty(STDERR_FILENO).
bool stderr_is_terminal();

class ProgressBar {
 public:
  // `redraw_every_steps` 0 picks one redraw per 1% of the steps. `unit`
  // names what is counted ("steps" for a run, "schedules" for a check):
  // "[####      ] 12/40 schedules".
  ProgressBar(std::ostream& out, bool enabled, size_t redraw_every_steps = 0,
              std::string unit = "steps");
  ~ProgressBar();  // clears the line if finish() was not called
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Steps done so far out of the total. Draws when at least redraw_every_steps
  // steps passed since the last drawing, and always on the last step.
  void update(size_t steps_done, size_t steps_total);
  // Erases the bar so the summary that follows starts on a clean line.
  void finish();

  size_t redraws() const { return redraws_; }

 private:
  void draw(size_t steps_done, size_t steps_total);

  std::ostream& out_;
  bool enabled_;
  size_t redraw_every_steps_;
  std::string unit_;
  bool drawn_ = false;
  size_t last_drawn_steps_ = 0;
  size_t last_width_ = 0;
  size_t redraws_ = 0;
};

}  // namespace tensorwire::report
