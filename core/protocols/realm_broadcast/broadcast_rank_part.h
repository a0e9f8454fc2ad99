// What one rank knows of a broadcast once its part is over, where each rank is
// a process of its own (verbs): its counters, its problems (its error, its
// part left unfinished, wrong bytes at its destinations), when its
// destinations were complete and its copies first busy, and the coverage it
// reached. The ranks all-gather their parts (CollectiveWorld::all_gather) and
// each merges them into the whole run's outcome. A part comes from another
// process: decoding validates it like any input from a peer, never crashing
// on a malformed one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/problem.h"
#include "core/protocol_counters.h"
#include "core/protocols/realm_broadcast/broadcast_coverage.h"
#include "core/status.h"

namespace tensorwire::collectives {

struct BroadcastRankPart {
  RankId rank = 0;
  ProtocolCounters counters;
  std::vector<Problem> problems;
  std::map<uint32_t, TimeNs> destination_done_ns;  // by buffer id, on this rank's clock
  std::map<uint32_t, TimeNs> copy_first_busy_ns;   // by copy id, on this rank's clock
  BroadcastCoverageCounts coverage;
};

std::string encode_broadcast_rank_part(const BroadcastRankPart& part);
// `expected_rank`: the rank the all-gather says sent it; `buffers` and
// `copies` bound the ids it may name (the transfer graph's).
Result<BroadcastRankPart> decode_broadcast_rank_part(std::string_view text, RankId expected_rank,
                                                     size_t buffers, size_t copies);

}  // namespace tensorwire::collectives
