#include "apps/tensorwire/option_checks.h"

#include <string>

#include "launch/ipv4_endpoint.h"

namespace tensorwire::app {

CLI::Validator non_empty_value() {
  return CLI::Validator(
      [](const std::string& value) {
        return value.empty() ? std::string("needs a value, not an empty string") : std::string();
      },
      "", "non-empty");
}

CLI::Validator ipv4_address_value() {
  return CLI::Validator(
      [](const std::string& value) {
        if (launch::parse_ipv4_address(value, "--address").is_ok()) return std::string();
        return "'" + value + "' is not an IPv4 address (want A.B.C.D)";
      },
      "", "IPv4 address");
}

}  // namespace tensorwire::app
