#include "core/protocols/tf_verbs_zero_copy/rdma_protocol_env.h"

#include "core/assert.h"
#include "core/protocols/tf_verbs_zero_copy/rdma_imm_data.h"

namespace tensorwire::tf_verbs {

wire::RdmaMessage make_error_status(const std::string& name, uint64_t step_id,
                                    uint32_t request_index, const Status& error) {
  // Every caller answers with the failure that stops the response (a failed
  // Send, an aborted step, a closed channel, a refused re-request).
  TW_ASSERT_MSG(!error.is_ok(), "an ERROR_STATUS reports an error");
  TW_ASSERT(!is_reserved_imm(request_index));
  wire::RdmaMessage m;
  m.type = wire::RdmaMessageType::kErrorStatus;
  m.name = name;
  m.step_id = step_id;
  m.request_index = request_index;
  m.remote_addr = 0;
  m.rkey = 0;
  m.is_dead = false;
  m.data_type = DataType::kFloat32;
  m.tensor_bytes = 0;
  m.error_code = error.code();
  m.error_message = error.message().substr(0, wire::kMaxErrorMessageBytes);
  return m;
}

}  // namespace tensorwire::tf_verbs
