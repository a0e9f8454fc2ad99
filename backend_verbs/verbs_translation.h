// Translation between the NIC contract's vocabulary (core/nic.h, core/memory.h)
// and libibverbs': access rights, work-request opcodes and completion
// statuses. Pure functions, so the tables can be tested without a device.
#pragma once

#include <infiniband/verbs.h>

#include "core/memory.h"
#include "core/nic.h"

namespace tensorwire::verbs {

// ibv_access_flags for `access`, with the least privilege verbs allow:
// local write only when asked for, or when remote write is asked for (verbs
// refuse REMOTE_WRITE without LOCAL_WRITE: ibv_reg_mr answers EINVAL); remote
// rights only when asked for. Local read is always implied, as in verbs.
int access_flags_for(Access access);

// The rights a region registered with `flags` really has, in the contract's
// terms (so kRemoteWrite always comes with kLocalWrite).
Access access_granted_by(int flags);

ibv_wr_opcode wr_opcode_for(WorkOpcode opcode);

// The sender's completion opcode for a work request (a write with immediate
// completes as a write on the sender's side, as in verbs).
CompletionOpcode sender_completion_opcode(WorkOpcode opcode);

// The contract's status closest to a verbs completion status. Exact for the
// statuses the contract names (LOC_LEN_ERR, LOC_PROT_ERR, REM_ACCESS_ERR,
// RNR_RETRY_EXC_ERR, RETRY_EXC_ERR, WR_FLUSH_ERR); the rest go to the nearest
// by who is at fault: a local failure to kLocalProtectionError, a request the
// responder refused (REM_INV_REQ_ERR: e.g. a send longer than the receive
// buffer; REM_OP_ERR) to kRemoteAccessError, and a broken transport or a
// vanished peer to kRetryExceeded. The original status is kept for
// diagnostics by the caller (ibv_wc_status_str).
CompletionStatus completion_status_for(ibv_wc_status status);

// "IBV_WC_REM_INV_REQ_ERR": the enum's own name, for diagnostics that a user
// can look up in the verbs documentation.
const char* wc_status_enum_name(ibv_wc_status status);

}  // namespace tensorwire::verbs
