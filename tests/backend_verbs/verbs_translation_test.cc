// The tables between the NIC contract and libibverbs: least-privilege access
// flags, opcodes, and completion statuses. No device needed.
#include "backend_verbs/verbs_translation.h"

#include <gtest/gtest.h>

namespace tensorwire::verbs {
namespace {

TEST(VerbsTranslation, AccessFlagsGrantNoMoreThanAskedOrThanVerbsForce) {
  EXPECT_EQ(access_flags_for(Access::kNone), 0);
  EXPECT_EQ(access_flags_for(Access::kLocalWrite), IBV_ACCESS_LOCAL_WRITE);
  EXPECT_EQ(access_flags_for(Access::kRemoteRead), IBV_ACCESS_REMOTE_READ);
  // Verbs refuse REMOTE_WRITE without LOCAL_WRITE.
  EXPECT_EQ(access_flags_for(Access::kRemoteWrite),
            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
  EXPECT_EQ(access_flags_for(Access::kRemoteRead | Access::kLocalWrite),
            IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE);
  // Never anything beyond the three rights (no atomics, no MW binding).
  for (uint32_t bits = 0; bits < 8; ++bits) {
    const int flags = access_flags_for(static_cast<Access>(bits));
    EXPECT_EQ(flags & ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
              0);
    EXPECT_TRUE(has_access(access_granted_by(flags), static_cast<Access>(bits)));
  }
}

TEST(VerbsTranslation, OpcodesMapOneToOne) {
  EXPECT_EQ(wr_opcode_for(WorkOpcode::kSend), IBV_WR_SEND);
  EXPECT_EQ(wr_opcode_for(WorkOpcode::kRdmaWrite), IBV_WR_RDMA_WRITE);
  EXPECT_EQ(wr_opcode_for(WorkOpcode::kRdmaWriteWithImm), IBV_WR_RDMA_WRITE_WITH_IMM);
  EXPECT_EQ(wr_opcode_for(WorkOpcode::kRdmaRead), IBV_WR_RDMA_READ);
  EXPECT_EQ(sender_completion_opcode(WorkOpcode::kRdmaWriteWithImm), CompletionOpcode::kRdmaWrite);
  EXPECT_EQ(sender_completion_opcode(WorkOpcode::kRdmaRead), CompletionOpcode::kRdmaRead);
}

TEST(VerbsTranslation, TheStatusesTheContractNamesMapExactly) {
  EXPECT_EQ(completion_status_for(IBV_WC_SUCCESS), CompletionStatus::kSuccess);
  EXPECT_EQ(completion_status_for(IBV_WC_LOC_LEN_ERR), CompletionStatus::kLocalLengthError);
  EXPECT_EQ(completion_status_for(IBV_WC_LOC_PROT_ERR), CompletionStatus::kLocalProtectionError);
  EXPECT_EQ(completion_status_for(IBV_WC_REM_ACCESS_ERR), CompletionStatus::kRemoteAccessError);
  EXPECT_EQ(completion_status_for(IBV_WC_RNR_RETRY_EXC_ERR), CompletionStatus::kRnrRetryExceeded);
  EXPECT_EQ(completion_status_for(IBV_WC_RETRY_EXC_ERR), CompletionStatus::kRetryExceeded);
  EXPECT_EQ(completion_status_for(IBV_WC_WR_FLUSH_ERR), CompletionStatus::kWorkRequestFlushed);
  // The sender's side of a send longer than the receive, as the simulator says it.
  EXPECT_EQ(completion_status_for(IBV_WC_REM_INV_REQ_ERR), CompletionStatus::kRemoteAccessError);
}

TEST(VerbsTranslation, EveryVerbsStatusMapsToAnErrorAndHasItsName) {
  for (int s = IBV_WC_LOC_LEN_ERR; s <= IBV_WC_TM_RNDV_INCOMPLETE; ++s) {
    const auto status = static_cast<ibv_wc_status>(s);
    EXPECT_NE(completion_status_for(status), CompletionStatus::kSuccess) << s;
    EXPECT_EQ(std::string(wc_status_enum_name(status)).rfind("IBV_WC_", 0), 0u) << s;
    EXPECT_EQ(std::string(wc_status_enum_name(status)).find("unknown"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace tensorwire::verbs
