// The zero-copy protocol on a real device, at its edges: a peer that sends a
// malformed control message gets its channel closed with an error (the wire
// decoder of core/wire refuses it; the rendezvous counts and reports it), and
// a Recv from that peer fails instead of waiting. Needs an RDMA device.
#include <gtest/gtest.h>

#include <optional>

#include "backend_verbs/verbs_rank_env.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_rendezvous.h"
#include "tests/backend_verbs/verbs_cluster.h"

namespace tensorwire::verbs {
namespace {

using testing::VerbsCluster;

TEST(VerbsRendezvous, AMalformedControlMessageClosesThatChannelWithAnError) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  Result<std::unique_ptr<VerbsCluster>> started = VerbsCluster::start(2, VerbsCluster::default_options());
  ASSERT_TRUE(started.is_ok()) << started.status().to_string();
  VerbsCluster& cluster = **started;
  NullTraceSink trace;
  VerbsRankEnv env(cluster.nic(0), trace);
  tf_verbs::TfVerbsOptions options;
  options.control_ring_size = 16;
  tf_verbs::RdmaRendezvous rendezvous(env.env(), options);
  ASSERT_TRUE(rendezvous.start().is_ok());

  // Rank 1 is not running the protocol: it sends 64 bytes of garbage into
  // rank 0's control ring, as a broken or hostile peer would.
  MemoryRegion garbage = cluster.region(1, 64, Access::kNone);
  for (std::byte& b : cluster.bytes_of(garbage)) b = std::byte{0xff};
  ASSERT_TRUE(cluster.post(1, 0, WorkOpcode::kSend, garbage, 64, 7).is_ok());
  ASSERT_TRUE(cluster.progress_until([&] { return rendezvous.stats().malformed_messages > 0; }))
      << "rank 0 never reported the malformed message";
  EXPECT_EQ(rendezvous.stats().malformed_messages, 1u);
  EXPECT_GE(rendezvous.stats().channel_failures, 1u);

  // A Recv from the peer whose channel is closed fails at once, with a reason.
  std::optional<Status> got;
  rendezvous.recv(1, "w", 1, {MemoryKind::kHostPinned, 0},
                  [&](Status st, Tensor) { got = st; });
  ASSERT_TRUE(cluster.progress_until([&] {
    (void)env.poll();
    return got.has_value();
  })) << "the Recv from the peer that sent garbage never ended";
  EXPECT_FALSE(got->is_ok());
  EXPECT_FALSE(got->message().empty());
}

}  // namespace
}  // namespace tensorwire::verbs
