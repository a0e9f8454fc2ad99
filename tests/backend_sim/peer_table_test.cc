// PeerTable (backend_sim/peer_table.h), the queue pairs' table by peer,
// against std::map over drawn peers: the same peers found, each value made
// once and never moved as the table grows.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "backend_sim/peer_table.h"

namespace tensorwire::sim::testing {
namespace {

struct Value {
  uint32_t made_for = UINT32_MAX;
};

RC_GTEST_PROP(PeerTable, FindsWhatWasMadeAndOnlyThatAndNeverMovesIt, ()) {
  // Peers from a small range (many repeats) or a large one (sparse ids).
  const uint32_t range = *rc::gen::element(8u, 1024u, 1u << 20);
  const auto peers = *rc::gen::container<std::vector<uint32_t>>(
      rc::gen::inRange<uint32_t>(0, range));
  PeerTable<Value> table;
  std::map<uint32_t, Value*> made;
  for (size_t i = 0; i < peers.size(); ++i) {
    const uint32_t peer = peers[i];
    if (i % 3 == 2) {  // a lookup alone makes nothing
      const Value* found = table.find(peer);
      auto it = made.find(peer);
      RC_ASSERT((found != nullptr) == (it != made.end()));
      if (found != nullptr) RC_ASSERT(found == it->second);
      continue;
    }
    Value& v = table.find_or_make(peer);
    auto [it, fresh] = made.try_emplace(peer, &v);
    if (fresh) {
      RC_ASSERT(v.made_for == UINT32_MAX);  // default-constructed
      v.made_for = peer;
    }
    RC_ASSERT(it->second == &v);
    RC_ASSERT(v.made_for == peer);
  }
  RC_ASSERT(table.size() == made.size());
  for (const auto& [peer, value] : made) {
    RC_ASSERT(table.find(peer) == value);
    RC_ASSERT(value->made_for == peer);
  }
}

TEST(PeerTable, AThousandPeersInOrderAreAllFoundWhereTheyWereMade) {
  PeerTable<Value> table;
  std::vector<Value*> at;
  for (uint32_t p = 0; p < 1024; ++p) {
    EXPECT_EQ(table.find(p), nullptr);
    at.push_back(&table.find_or_make(p));
    at.back()->made_for = p;
  }
  for (uint32_t p = 0; p < 1024; ++p) {
    ASSERT_EQ(table.find(p), at[p]) << "peer " << p;
    EXPECT_EQ(table.find(p)->made_for, p);
  }
  EXPECT_EQ(table.find(1024), nullptr);
  EXPECT_EQ(table.size(), 1024u);
}

}  // namespace
}  // namespace tensorwire::sim::testing
