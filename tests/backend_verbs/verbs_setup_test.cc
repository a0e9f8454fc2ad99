// Setting up a VerbsNic: the errors a user meets when the device or address
// is wrong are clear and name what is wrong.
#include <gtest/gtest.h>

#include <string>

#include "backend_verbs/verbs_device.h"
#include "tests/backend_verbs/verbs_cluster.h"

namespace tensorwire::verbs::testing {
namespace {

// Runs without a device too: the answer is then "no such device" (or that
// this kernel has no RDMA at all), never a crash.
TEST(VerbsSetup, UnknownDeviceNameIsAClearError) {
  Status st = VerbsDevice::check_openable("nosuchdevice0");
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  const bool names_it =
      st.message().find("no RDMA device named 'nosuchdevice0'") != std::string::npos;
  const bool no_rdma = st.message().find("ibv_get_device_list") != std::string::npos;
  EXPECT_TRUE(names_it || no_rdma) << st.to_string();
}

TEST(VerbsSetup, FactoryRefusesAnUnknownDeviceAndTellsTheOtherRanks) {
  VerbsNicOptions options = VerbsCluster::default_options();
  options.device_name = "nosuchdevice0";
  options.address = "127.0.0.1";
  Result<std::unique_ptr<VerbsCluster>> cluster = VerbsCluster::start(2, options);
  ASSERT_FALSE(cluster.is_ok());
  EXPECT_NE(cluster.status().message().find("rank 0: "), std::string::npos)
      << cluster.status().to_string();
}

TEST(VerbsSetup, FactoryRefusesAnAddressThatIsNotIpv4) {
  VerbsNicOptions options = VerbsCluster::default_options();
  options.device_name = "rxe0";
  options.address = "10.77.0";
  Result<std::unique_ptr<VerbsCluster>> cluster = VerbsCluster::start(1, options);
  ASSERT_FALSE(cluster.is_ok());
  EXPECT_EQ(cluster.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cluster.status().message().find("RDMA address: '10.77.0'"), std::string::npos)
      << cluster.status().to_string();
}

TEST(VerbsSetup, AddressOfNoRdmaDeviceIsAClearError) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  VerbsNicOptions options = VerbsCluster::default_options();
  options.address = "127.0.0.1";  // loopback carries no RDMA device
  Result<std::unique_ptr<VerbsCluster>> cluster = VerbsCluster::start(1, options);
  ASSERT_FALSE(cluster.is_ok());
  EXPECT_NE(cluster.status().message().find("127.0.0.1"), std::string::npos)
      << cluster.status().to_string();
}

TEST(VerbsSetup, QueueDepthBeyondTheDeviceIsAClearError) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  VerbsNicOptions options = VerbsCluster::default_options();
  options.send_queue_depth = 1u << 30;
  Result<std::unique_ptr<VerbsCluster>> cluster = VerbsCluster::start(1, options);
  ASSERT_FALSE(cluster.is_ok());
  EXPECT_NE(cluster.status().message().find("max_qp_wr"), std::string::npos)
      << cluster.status().to_string();
}

TEST(VerbsSetup, DeviceLimitsAreReadFromTheDevice) {
  TENSORWIRE_SKIP_WITHOUT_RDMA();
  Result<std::unique_ptr<VerbsDevice>> device =
      VerbsDevice::open(VerbsCluster::default_options().device_name, VerbsDeviceOptions{});
  ASSERT_TRUE(device.is_ok()) << device.status().to_string();
  const DeviceLimits& limits = (*device)->limits();
  EXPECT_GT(limits.max_qp_wr, 0u);
  EXPECT_GT(limits.max_cqe, 0u);
  EXPECT_GT(limits.max_qp_rd_atom, 0u);
  EXPECT_GT((*device)->completion_queue_capacity(), 0u);
  RecordProperty("max_inline_data", static_cast<int>(limits.max_inline_data));
  RecordProperty("max_qp_wr", static_cast<int>(limits.max_qp_wr));
}

}  // namespace
}  // namespace tensorwire::verbs::testing
