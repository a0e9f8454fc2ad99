// The cluster as a graph (Boost.Graph): every node's host memory, GPU memories
// and NIC are vertices; PCIe, NVLink and the network are edges with a bandwidth
// and a latency. find_fastest_path runs Dijkstra over transfer time, as Realm's
// collective copies do to route each source -> destination leg.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/cluster.h"
#include "core/memory.h"

namespace tensorwire::collectives {

// One memory of the cluster: a node's host memory or one of its GPUs.
struct MemoryId {
  static constexpr uint32_t kHost = UINT32_MAX;
  uint32_t node = 0;
  uint32_t gpu = kHost;

  bool is_host() const { return gpu == kHost; }
  static MemoryId host(uint32_t node) { return {node, kHost}; }
  static MemoryId gpu_of(uint32_t node, uint32_t gpu) { return {node, gpu}; }
  // "node3/host", "node3/gpu1"
  std::string name() const;
  friend bool operator==(const MemoryId&, const MemoryId&) = default;
  friend auto operator<=>(const MemoryId&, const MemoryId&) = default;
};

// A resource data moves through and that serialises what crosses it, as the
// simulator models it: a NIC port's transmit or receive side, a GPU's copy
// engine (PCIe and NVLink copies of that GPU), a node's CPU (host memcpy).
struct LinkId {
  uint32_t value = 0;
  friend bool operator==(LinkId, LinkId) = default;
};

// One leg of a path: a copy from one memory to the next.
struct PathHop {
  MemoryId from;
  MemoryId to;
  bool network = false;  // an RDMA write between nodes; else a local copy
  // What the hop occupies, and how long it keeps each busy per byte.
  struct Use {
    LinkId link;
    double bandwidth_bytes_per_s = 0;
  };
  std::vector<Use> uses;
  TimeNs latency_ns = 0;
};

struct MemoryPath {
  std::vector<PathHop> hops;  // empty when source and destination are one memory
  TimeNs cost_ns = 0;         // sum over hops of latency + bytes / bandwidth
};

class ClusterTopology {
 public:
  explicit ClusterTopology(Cluster cluster);
  ~ClusterTopology();
  ClusterTopology(ClusterTopology&&) noexcept;
  ClusterTopology& operator=(ClusterTopology&&) noexcept;

  const Cluster& cluster() const { return cluster_; }
  bool contains(MemoryId m) const;
  // The memory kind a buffer in `m` has (host pinned, GPU with or without GPUDirect).
  MemoryKind kind_of(MemoryId m) const;
  uint32_t device_of(MemoryId m) const { return m.is_host() ? 0 : m.gpu; }

  // The fastest way to move `bytes` from `src` to `dst`, hop by hop. Memories a
  // path passes through are where IB buffers go. A path between two memories of
  // one node never leaves the node. nullopt when either memory is unknown.
  std::optional<MemoryPath> find_fastest_path(MemoryId src, MemoryId dst, uint64_t bytes) const;
  // A copy within one memory (a source and a destination instance side by side).
  PathHop same_memory_hop(MemoryId m) const;

  uint32_t link_count() const;
  std::string link_name(LinkId link) const;

  // Vertices and edges of the whole-cluster graph (for tests and reports).
  uint32_t vertex_count() const;
  uint32_t edge_count() const;

 private:
  struct Graphs;
  Cluster cluster_;
  std::unique_ptr<Graphs> graphs_;
};

}  // namespace tensorwire::collectives
