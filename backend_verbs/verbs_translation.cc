#include "backend_verbs/verbs_translation.h"

namespace tensorwire::verbs {

int access_flags_for(Access access) {
  int flags = 0;
  if (has_access(access, Access::kLocalWrite)) flags |= IBV_ACCESS_LOCAL_WRITE;
  if (has_access(access, Access::kRemoteWrite)) {
    flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  }
  if (has_access(access, Access::kRemoteRead)) flags |= IBV_ACCESS_REMOTE_READ;
  return flags;
}

Access access_granted_by(int flags) {
  Access access = Access::kNone;
  if ((flags & IBV_ACCESS_LOCAL_WRITE) != 0) access = access | Access::kLocalWrite;
  if ((flags & IBV_ACCESS_REMOTE_WRITE) != 0) access = access | Access::kRemoteWrite;
  if ((flags & IBV_ACCESS_REMOTE_READ) != 0) access = access | Access::kRemoteRead;
  return access;
}

ibv_wr_opcode wr_opcode_for(WorkOpcode opcode) {
  switch (opcode) {
    case WorkOpcode::kSend: return IBV_WR_SEND;
    case WorkOpcode::kRdmaWrite: return IBV_WR_RDMA_WRITE;
    case WorkOpcode::kRdmaWriteWithImm: return IBV_WR_RDMA_WRITE_WITH_IMM;
    case WorkOpcode::kRdmaRead: return IBV_WR_RDMA_READ;
  }
  return IBV_WR_SEND;
}

CompletionOpcode sender_completion_opcode(WorkOpcode opcode) {
  switch (opcode) {
    case WorkOpcode::kSend: return CompletionOpcode::kSend;
    case WorkOpcode::kRdmaWrite:
    case WorkOpcode::kRdmaWriteWithImm: return CompletionOpcode::kRdmaWrite;
    case WorkOpcode::kRdmaRead: return CompletionOpcode::kRdmaRead;
  }
  return CompletionOpcode::kSend;
}

CompletionStatus completion_status_for(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return CompletionStatus::kSuccess;
    // The ones the contract names.
    case IBV_WC_LOC_LEN_ERR: return CompletionStatus::kLocalLengthError;
    case IBV_WC_LOC_PROT_ERR: return CompletionStatus::kLocalProtectionError;
    case IBV_WC_REM_ACCESS_ERR: return CompletionStatus::kRemoteAccessError;
    case IBV_WC_RNR_RETRY_EXC_ERR: return CompletionStatus::kRnrRetryExceeded;
    case IBV_WC_RETRY_EXC_ERR: return CompletionStatus::kRetryExceeded;
    case IBV_WC_WR_FLUSH_ERR: return CompletionStatus::kWorkRequestFlushed;
    // Local: this side's work request or memory was at fault.
    case IBV_WC_LOC_QP_OP_ERR:
    case IBV_WC_LOC_EEC_OP_ERR:
    case IBV_WC_MW_BIND_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_LOC_RDD_VIOL_ERR: return CompletionStatus::kLocalProtectionError;
    // The responder refused the request. A send longer than the receive it
    // lands in is REM_INV_REQ_ERR at the sender on most HCAs; the simulator
    // reports that case as a remote access error too.
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_REM_OP_ERR:
    case IBV_WC_REM_INV_RD_REQ_ERR: return CompletionStatus::kRemoteAccessError;
    // The transport or the peer broke: the peer is as good as gone.
    case IBV_WC_BAD_RESP_ERR:
    case IBV_WC_REM_ABORT_ERR:
    case IBV_WC_INV_EECN_ERR:
    case IBV_WC_INV_EEC_STATE_ERR:
    case IBV_WC_FATAL_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
    case IBV_WC_GENERAL_ERR: return CompletionStatus::kRetryExceeded;
    // Tag matching is not used; should one appear, it is a local failure.
    case IBV_WC_TM_ERR:
    case IBV_WC_TM_RNDV_INCOMPLETE: return CompletionStatus::kLocalProtectionError;
  }
  return CompletionStatus::kRetryExceeded;
}

const char* wc_status_enum_name(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "IBV_WC_SUCCESS";
    case IBV_WC_LOC_LEN_ERR: return "IBV_WC_LOC_LEN_ERR";
    case IBV_WC_LOC_QP_OP_ERR: return "IBV_WC_LOC_QP_OP_ERR";
    case IBV_WC_LOC_EEC_OP_ERR: return "IBV_WC_LOC_EEC_OP_ERR";
    case IBV_WC_LOC_PROT_ERR: return "IBV_WC_LOC_PROT_ERR";
    case IBV_WC_WR_FLUSH_ERR: return "IBV_WC_WR_FLUSH_ERR";
    case IBV_WC_MW_BIND_ERR: return "IBV_WC_MW_BIND_ERR";
    case IBV_WC_BAD_RESP_ERR: return "IBV_WC_BAD_RESP_ERR";
    case IBV_WC_LOC_ACCESS_ERR: return "IBV_WC_LOC_ACCESS_ERR";
    case IBV_WC_REM_INV_REQ_ERR: return "IBV_WC_REM_INV_REQ_ERR";
    case IBV_WC_REM_ACCESS_ERR: return "IBV_WC_REM_ACCESS_ERR";
    case IBV_WC_REM_OP_ERR: return "IBV_WC_REM_OP_ERR";
    case IBV_WC_RETRY_EXC_ERR: return "IBV_WC_RETRY_EXC_ERR";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "IBV_WC_RNR_RETRY_EXC_ERR";
    case IBV_WC_LOC_RDD_VIOL_ERR: return "IBV_WC_LOC_RDD_VIOL_ERR";
    case IBV_WC_REM_INV_RD_REQ_ERR: return "IBV_WC_REM_INV_RD_REQ_ERR";
    case IBV_WC_REM_ABORT_ERR: return "IBV_WC_REM_ABORT_ERR";
    case IBV_WC_INV_EECN_ERR: return "IBV_WC_INV_EECN_ERR";
    case IBV_WC_INV_EEC_STATE_ERR: return "IBV_WC_INV_EEC_STATE_ERR";
    case IBV_WC_FATAL_ERR: return "IBV_WC_FATAL_ERR";
    case IBV_WC_RESP_TIMEOUT_ERR: return "IBV_WC_RESP_TIMEOUT_ERR";
    case IBV_WC_GENERAL_ERR: return "IBV_WC_GENERAL_ERR";
    case IBV_WC_TM_ERR: return "IBV_WC_TM_ERR";
    case IBV_WC_TM_RNDV_INCOMPLETE: return "IBV_WC_TM_RNDV_INCOMPLETE";
  }
  return "IBV_WC_(unknown)";
}

}  // namespace tensorwire::verbs
