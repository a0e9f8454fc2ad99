#include "backend_verbs/device_ipv4_address.h"

#include <cctype>
#include <fstream>
#include <string_view>

namespace tensorwire::verbs {

std::string ipv4_of_mapped_gid(const std::string& gid_text) {
  std::string text = gid_text;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  // Eight groups of four hex digits separated by ':'.
  if (text.size() != 39) return {};
  for (size_t i = 0; i < text.size(); ++i) {
    const bool colon = i % 5 == 4;
    if (colon ? text[i] != ':' : !std::isxdigit(static_cast<unsigned char>(text[i]))) return {};
  }
  if (std::string_view(text).substr(0, 30) != "0000:0000:0000:0000:0000:ffff:") return {};
  const unsigned long hi = std::stoul(text.substr(30, 4), nullptr, 16);
  const unsigned long lo = std::stoul(text.substr(35, 4), nullptr, 16);
  if (hi == 0 && lo == 0) return {};
  return std::to_string(hi >> 8) + "." + std::to_string(hi & 0xff) + "." +
         std::to_string(lo >> 8) + "." + std::to_string(lo & 0xff);
}

Result<std::string> device_ipv4_address(const std::string& device, uint8_t port,
                                        const std::string& sysfs_root) {
  if (device.empty() || device.find('/') != std::string::npos || device == "." ||
      device == "..") {
    return Status(StatusCode::kInvalidArgument, "'" + device + "' is not an RDMA device name");
  }
  const std::string dir =
      sysfs_root + "/" + device + "/ports/" + std::to_string(port) + "/gids/";
  bool any_read = false;
  // Devices list 128 to 256 GIDs at most; RoCE puts the addresses first.
  for (int index = 0; index < 256; ++index) {
    std::ifstream in(dir + std::to_string(index));
    if (!in) break;
    any_read = true;
    std::string line;
    std::getline(in, line);
    if (std::string ip = ipv4_of_mapped_gid(line); !ip.empty()) return ip;
  }
  if (!any_read) {
    return Status(StatusCode::kNotFound, "cannot read " + dir +
                                             "0: no RDMA device '" + device + "' port " +
                                             std::to_string(port) + " here; give --address");
  }
  return Status(StatusCode::kNotFound, "RDMA device '" + device + "' port " +
                                           std::to_string(port) +
                                           " lists no IPv4 address in its GID table (" + dir +
                                           "N); give --address");
}

}  // namespace tensorwire::verbs
