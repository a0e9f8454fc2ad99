#include "core/protocols/protocol_registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tensorwire {
namespace {

TEST(ProtocolRegistry, NamesAreUniqueAndFound) {
  std::set<std::string_view> names;
  ASSERT_FALSE(registered_protocols().empty());
  for (const ProtocolDescriptor* p : registered_protocols()) {
    EXPECT_TRUE(names.insert(p->name()).second) << p->name() << " registered twice";
    EXPECT_EQ(find_protocol(p->name()), p);
    EXPECT_FALSE(p->summary().empty()) << p->name();
    EXPECT_FALSE(p->workload_kinds().empty()) << p->name();
  }
  EXPECT_EQ(find_protocol("no_such_protocol"), nullptr);
  EXPECT_NE(registered_protocol_names().find("\"tf_verbs_zero_copy\""), std::string::npos);
}

TEST(ProtocolRegistry, EveryWorkloadKindHasADefaultProtocolThatRunsIt) {
  for (const ProtocolDescriptor* p : registered_protocols()) {
    for (std::string_view kind : p->workload_kinds()) {
      const ProtocolDescriptor* d = default_protocol_for(kind);
      ASSERT_NE(d, nullptr) << kind;
      bool runs = false;
      for (std::string_view k : d->workload_kinds()) runs = runs || k == kind;
      EXPECT_TRUE(runs) << d->name() << " for " << kind;
    }
  }
  EXPECT_EQ(default_protocol_for("allreduce"), nullptr);
  EXPECT_EQ(default_protocol_config().name, registered_protocols().front()->name());
}

// Every protocol's bug zoo, through the descriptor alone: each bug plants and
// reads back by name, "none" clears, another name is refused.
TEST(ProtocolRegistry, EveryPlantedBugPlantsAndReadsBackByName) {
  for (const ProtocolDescriptor* p : registered_protocols()) {
    ProtocolConfig config = protocol_config(p->name());
    EXPECT_EQ(p->planted_bug(config.options), "none") << p->name();
    for (std::string_view bug : p->planted_bugs()) {
      ASSERT_TRUE(p->plant_bug(config.options, bug)) << p->name() << " " << bug;
      EXPECT_EQ(p->planted_bug(config.options), bug);
    }
    EXPECT_TRUE(p->plant_bug(config.options, "none"));
    EXPECT_EQ(p->planted_bug(config.options), "none");
    EXPECT_FALSE(p->plant_bug(config.options, "no_such_bug"));
  }
}

TEST(ProtocolRegistry, PointToPointProtocolsKeepReceivesPostedForTheirPeers) {
  for (const ProtocolDescriptor* p : registered_protocols()) {
    if (p->shape() != ProtocolShape::kPointToPoint) continue;
    EXPECT_GT(p->receives_per_peer(p->default_options()), 0u) << p->name();
  }
}

}  // namespace
}  // namespace tensorwire
