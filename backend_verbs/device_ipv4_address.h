// The IPv4 address of an RDMA device's port, for when the user names the
// device but not the address: RoCE v2 lists every IPv4 address of the port's
// network interface in its GID table as an IPv4-mapped GID (::ffff:A.B.C.D),
// which the kernel shows in /sys/class/infiniband/DEVICE/ports/PORT/gids/N.
// The first such GID wins. (InfiniBand ports have none: name the IPoIB
// address with --address.)
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace tensorwire::verbs {

// "A.B.C.D", or kNotFound naming the device and what was looked at. `sysfs_root`
// is "/sys/class/infiniband" except in tests.
Result<std::string> device_ipv4_address(const std::string& device, uint8_t port = 1,
                                        const std::string& sysfs_root = "/sys/class/infiniband");

// "0000:0000:0000:0000:0000:ffff:0a4d:0001" -> "10.77.0.1"; empty when the
// text is not an IPv4-mapped GID (0.0.0.0 counts as not one).
std::string ipv4_of_mapped_gid(const std::string& gid_text);

}  // namespace tensorwire::verbs
