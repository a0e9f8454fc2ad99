#include "core/nic.h"

namespace tensorwire {

const char* completion_status_name(CompletionStatus status) {
  switch (status) {
    case CompletionStatus::kSuccess: return "success";
    case CompletionStatus::kLocalLengthError: return "local_length_error";
    case CompletionStatus::kLocalProtectionError: return "local_protection_error";
    case CompletionStatus::kRemoteAccessError: return "remote_access_error";
    case CompletionStatus::kRnrRetryExceeded: return "rnr_retry_exceeded";
    case CompletionStatus::kRetryExceeded: return "retry_exceeded";
    case CompletionStatus::kWorkRequestFlushed: return "work_request_flushed";
  }
  return "unknown";
}

const char* work_opcode_name(WorkOpcode opcode) {
  switch (opcode) {
    case WorkOpcode::kSend: return "send";
    case WorkOpcode::kRdmaWrite: return "rdma write";
    case WorkOpcode::kRdmaWriteWithImm: return "rdma write with imm";
    case WorkOpcode::kRdmaRead: return "rdma read";
  }
  return "?";
}

const char* completion_opcode_name(CompletionOpcode opcode) {
  switch (opcode) {
    case CompletionOpcode::kSend: return "send";
    case CompletionOpcode::kRdmaWrite: return "rdma_write";
    case CompletionOpcode::kRdmaRead: return "rdma_read";
    case CompletionOpcode::kRecv: return "recv";
    case CompletionOpcode::kRecvRdmaWithImm: return "recv_rdma_with_imm";
  }
  return "unknown";
}

}  // namespace tensorwire
