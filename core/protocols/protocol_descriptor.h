// What a protocol folder brings to the registry (UCX's UCP_PROTO_REGISTER):
// its name, the workloads it runs, its options (defaults and how to read them
// from [protocol.<name>]), its planted bugs for the model checker's bug zoo,
// its invariants, and the factory of its per-rank instance. Nothing above
// core/protocols/ names a protocol: it asks the registry for a descriptor.
#pragma once

#include <any>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/collective.h"
#include "core/coverage.h"
#include "core/option_reader.h"
#include "core/protocol_invariants.h"
#include "core/rank_env.h"
#include "core/rendezvous.h"
#include "core/status.h"
#include "core/workload/workload.h"

namespace tensorwire {

class SwarmDraw;  // core/protocols/swarm_draw.h

// How a protocol meets a workload: point to point (Send/Recv between pairs of
// ranks, through a Rendezvous per rank) or collective (one operation over
// many ranks, planned as a whole).
enum class ProtocolShape : uint8_t { kPointToPoint, kCollective };

class ProtocolDescriptor {
 public:
  virtual ~ProtocolDescriptor() = default;

  // The scenario's [protocol] name and the name of its options table.
  virtual std::string_view name() const = 0;
  // One line for listings and --help.
  virtual std::string_view summary() const = 0;
  virtual ProtocolShape shape() const = 0;
  // The [workload] kinds it runs ("tensors", "broadcast", ...).
  virtual std::vector<std::string_view> workload_kinds() const = 0;

  // The keys [protocol.<name>] may hold; the loader rejects any other.
  virtual std::vector<std::string_view> option_keys() const = 0;
  // The options when the scenario sets none; the type is the protocol's own.
  virtual std::any default_options() const = 0;
  // Reads [protocol.<name>] over the defaults (errors throw from `reader`).
  virtual std::any read_options(const OptionReader& reader) const = 0;

  // What a run of it should reach (core/coverage.h): its states and
  // transitions, message types, paths and the options that change what it
  // does, every item at 0 except the options items `options` selects (counted
  // once). A run adds what it reached; `run` and `check` list what none did.
  virtual Coverage coverage(const std::any& options) const = 0;

  // The bug zoo: bugs that can be planted ("none" is not one of them).
  virtual std::vector<std::string_view> planted_bugs() const = 0;
  // Plants `bug` ("none" clears) in `options`; false for an unknown name.
  virtual bool plant_bug(std::any& options, std::string_view bug) const = 0;
  // The bug planted in `options`, "none" when there is none.
  virtual std::string planted_bug(const std::any& options) const = 0;

  // Receives the protocol keeps posted per peer (the NIC's receive queue
  // must hold at least this many).
  virtual uint32_t receives_per_peer(const std::any& options) const = 0;

  // Point-to-point protocols: one instance for one rank. Collectives: never
  // called (they plan and run the whole operation: collective()).
  virtual std::unique_ptr<Rendezvous> make_rendezvous(RankEnv env, const std::any& options) const = 0;
  // What the model checker checks beside the harness's own checks, with every
  // rank's instance (index = rank) in view. nullptr when the protocol adds none.
  virtual std::unique_ptr<ProtocolInvariants> make_invariants(
      std::vector<const Rendezvous*> ranks) const = 0;

  // Point-to-point protocols, for payload-mode memory estimates made before a
  // run: the bytes of the protocol's own buffers (clones, staging buffers,
  // host proxies) it may hold at once for `transfer`, at most, beside the
  // source the application sends from and the destination it receives into.
  // Collectives: 0 (CollectiveProtocol::payload_bytes says it all).
  virtual uint64_t transfer_buffer_bytes(const std::any& options,
                                         const TensorTransfer& transfer) const = 0;

  // Collective protocols: how they read their [workload] table and run the
  // operation in a backend's world (core/collective.h). nullptr for
  // point-to-point protocols; never nullptr for collective ones.
  virtual const CollectiveProtocol* collective() const = 0;

  // Swarm testing (`tensorwire check --swarm`): a small scenario of this
  // protocol, as the text of a scenario file (all but its name) that loads
  // and runs, made from `draw`'s picks alone: the same picks give the same
  // text, smaller picks a smaller scenario (core/protocols/swarm_draw.h
  // seeds, names and shrinks it). Empty: the protocol draws none.
  virtual std::string draw_swarm_scenario(SwarmDraw& /*draw*/) const { return {}; }
};

}  // namespace tensorwire
