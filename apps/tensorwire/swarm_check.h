// `tensorwire check --swarm N SCENARIO`: swarm testing. SCENARIO names the
// protocol (nothing else of it is used); the protocol draws N small
// scenarios of its own (ProtocolDescriptor::draw_swarm_scenario), seeded by
// --seed, and each is checked with the strategy, --max-schedules each,
// --faults and --plant-bug. The first violation stops the swarm: the drawn
// scenario is shrunk to the smallest draw found that fails alike
// (shrink_swarm_scenario), written as PREFIX.scenario.toml and checked again as a file,
// which writes PREFIX.schedule (naming that file) and the rest as `check`
// does, so `check PREFIX.scenario.toml --replay PREFIX.schedule` replays it.
#pragma once

#include <cstdint>
#include <ostream>

#include <CLI/CLI.hpp>

#include "apps/tensorwire/check_command.h"

namespace tensorwire::app {

// Scenario `index` of a swarm seeded `swarm_seed`: the seed and size it is
// drawn with. Scenario i does not depend on N (a longer swarm starts with
// the shorter one's scenarios); sizes cycle 10, 20, ..., 100.
struct SwarmDrawKey {
  uint64_t seed = 0;
  uint32_t size = 0;
};
SwarmDrawKey swarm_draw_key(uint64_t swarm_seed, uint64_t index);

// --swarm N on the check subcommand.
void add_swarm_option(CLI::App& check, CheckArgs& args);

// Exit codes as for `check`; 70 when a drawn scenario does not load or
// cannot be checked (the protocol's generator is wrong: the text is written
// as PREFIX.scenario.toml to look at), or its violation does not reproduce.
int swarm_check(const CheckArgs& args, std::ostream& out, std::ostream& err);

}  // namespace tensorwire::app
