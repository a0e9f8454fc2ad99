// The bootstrap coordinator: how separate processes, one per rank, learn each
// other's rdma_cm addresses before any queue pair exists, and wait for each
// other (a barrier) once every queue pair is connected.
//
// Rank 0 listens on HOST:PORT; every other rank connects there and says
// hello (its rank and the world size it was started with). An all-gather is
// each rank sending its bytes to rank 0 and rank 0 answering everyone with
// every rank's bytes in rank order; a barrier is an all-gather of nothing.
// The wire format is in coordinator_frame.h.
//
// Every operation is bounded by the options' timeout and every byte read from
// a socket is validated; a malformed message is a kMalformedMessage Status
// naming the peer that sent it. After any error the coordinator is broken:
// later calls answer kAborted with the first error.
//
// A lost rank is named: a connection that closes without an abort first (the
// peer's process ended: its kernel closed the socket) or breaks (its host went
// silent for the peer timeout) fails the exchange, or watch_peers(), with
// kPeerGone "rank N lost: ..."; one that carried an abort, with kAborted
// "rank N ... gave up: WHY". Rank 0, failing, passes its reason on to the
// others in its own abort, so every rank learns which rank was lost.
//
// Not thread-safe: one thread per coordinator (each rank has its own).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/bounded_socket_io.h"
#include "core/nic.h"
#include "core/status.h"

namespace tensorwire::launch {

struct CoordinatorOptions {
  // "HOST:PORT": where rank 0 listens (port 0 lets rank 0 take any free port,
  // which it then reports through port()) and where the others connect.
  std::string address;
  RankId rank = 0;
  uint32_t world_size = 1;
  // Bound on each of join, all_gather and barrier.
  std::chrono::milliseconds timeout{30'000};
  // How soon a connection whose peer went silent (its host gone: no FIN ever
  // comes) counts as broken: TCP keepalive and TCP_USER_TIMEOUT on every
  // connection. A peer whose process ended is seen at once regardless.
  std::chrono::milliseconds peer_timeout{5'000};
};

class TcpCoordinator {
 public:
  // Rank 0 binds and listens here, so port() is known before anyone joins.
  // Other ranks only resolve the address; they connect in join().
  static Result<std::unique_ptr<TcpCoordinator>> create(const CoordinatorOptions& options);
  ~TcpCoordinator();

  RankId rank() const { return rank_; }
  uint32_t world_size() const { return world_size_; }
  // The port rank 0 listens on (the one the kernel picked when asked for 0).
  uint16_t port() const { return endpoint_.port; }

  // Rank 0: accepts a hello from every other rank. Others: connect (retrying
  // until rank 0 listens) and say hello.
  Status join();

  // Every rank's `mine`, indexed by rank. Each at most kMaxGatherEntryBytes.
  Result<std::vector<std::string>> all_gather(std::string_view mine);

  // Returns once every rank has called barrier().
  Status barrier();
  // The same with its own bound instead of the options' timeout (a phase of a
  // workload may legitimately take longer than set-up should).
  Status barrier(std::chrono::milliseconds timeout);

  // The same barrier, driven by the caller so that it never blocks: for a
  // rank that must keep serving its peers while it waits (the end of a
  // phase). start_barrier() sends this rank's arrival; poll_barrier() takes
  // in whatever has come, without waiting, and answers the barrier's result
  // once every rank has arrived (rank 0 then tells the others), nullopt
  // before. The barrier fails if `timeout` passes first. Nothing else may be
  // called while one is pending. No thread is involved, so none waits for a
  // core behind a busy-polling progress loop.
  Status start_barrier(std::chrono::milliseconds timeout);
  std::optional<Status> poll_barrier();
  bool barrier_pending() const { return pending_ != nullptr; }
  // The sockets a pending barrier still waits to read from (none when no
  // barrier is pending): an idle rank may sleep until one is readable.
  std::vector<int> barrier_fds() const;

  // Between exchanges, from a rank's progress loop: whether every rank this
  // one is connected to (rank 0: all; the others: rank 0) is still there,
  // without waiting. A connection that closed or broke fails the coordinator
  // with "rank N lost: ..." (kPeerGone), or "... gave up: WHY" (kAborted)
  // when an abort came first. Connections a pending barrier is reading are
  // left to it: it reports the same. OK while all are there; once the
  // coordinator has failed, its first error.
  Status watch_peers();

  // Gives up: sends `why` in an abort to every connection and closes them, so
  // the other ranks fail at once, knowing why, instead of at their timeout
  // (any failure of the coordinator does the same). Later calls answer
  // kAborted with `why`.
  void abort(const Status& why);

 private:
  struct Peer {
    Socket socket;
    std::string name;  // "rank 2 (127.0.0.1:41234)"
  };

  struct PendingBarrier;  // a started, not yet ended start_barrier()

  TcpCoordinator(const CoordinatorOptions& options, Ipv4Endpoint endpoint);
  Status join_as_root(Deadline deadline);
  Status join_as_member(Deadline deadline);
  Result<std::vector<std::string>> exchange(std::string_view mine, std::string_view what,
                                            std::chrono::milliseconds timeout);
  // barrier: every rank's entry must be empty (a rank that sent bytes is out
  // of step: it is in an all-gather).
  Result<std::vector<std::string>> exchange_as_root(std::string_view mine, uint32_t sequence,
                                                    Deadline deadline, bool barrier);
  Result<std::vector<std::string>> exchange_as_member(std::string_view mine, uint32_t sequence,
                                                      Deadline deadline);
  Result<bool> poll_barrier_as_root();
  Result<bool> poll_barrier_as_member();
  // Remembers the first error, tells the others (an abort) and closes every
  // connection; later calls report it.
  Status fail(Status error);
  void tell_the_others(const Status& why);
  Status usable(std::string_view call) const;
  // A connection that watch_peers found closed or broken: reads what is left
  // on it for an abort. The error that names rank `r`.
  Status ended_connection(RankId r);
  // The error for rank r's connection failing with `st`: an abort waiting on
  // it, else "rank r lost: ..." for a closed one, else `st` naming the peer.
  Status connection_failed(RankId r, const Status& st);
  const Socket& connection_to(RankId r) const { return rank_ == 0 ? members_[r].socket : to_root_; }
  const std::string& name_of(RankId r) const { return rank_ == 0 ? members_[r].name : root_name_; }
  // An exchange (all-gather or barrier, blocking or driven) may begin: usable,
  // joined, and no driven barrier pending.
  Status may_start(std::string_view what) const;
  Deadline deadline() const;

  RankId rank_;
  uint32_t world_size_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds peer_timeout_;
  Ipv4Endpoint endpoint_;
  Socket listener_;            // rank 0
  std::vector<Peer> members_;  // rank 0: index = rank (entry 0 unused)
  Socket to_root_;             // other ranks
  std::string root_name_;
  bool joined_ = false;
  uint32_t sequence_ = 0;
  std::unique_ptr<PendingBarrier> pending_;
  Status broken_;
};

}  // namespace tensorwire::launch
