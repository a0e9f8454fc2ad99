// What `tensorwire check` prints after a search: the schedules explored (and
// whether every order was), the distinct states and their rate, the state
// machines' transitions covered (or the invariants used), and the outcome.
#pragma once

#include <string>
#include <string_view>

#include "model/explorer.h"

namespace tensorwire::report {

// `seconds`: the search's wall time, for the states/s rate; `exact`: the
// search cut at repeated states only where no order is lost; `dfs`: the
// search could have explored every order, so one that found nothing says
// whether it did ("nothing found (not exhaustive: stopped after N
// schedules)"); random and pct say "nothing found in N schedules".
std::string check_summary_text(const model::CheckReport& report, bool dfs, bool exact,
                               std::string_view protocol_name, double seconds);

}  // namespace tensorwire::report
