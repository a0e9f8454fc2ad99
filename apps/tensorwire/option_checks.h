// Checks of flag values that CLI11 runs as it parses, so a bad value is an
// error naming the flag before anything runs: a file name or a device that
// is given must not be empty ("--json ''" would otherwise write nothing, with
// no word said), and --address must be an IPv4 address.
#pragma once

#include <CLI/CLI.hpp>

namespace tensorwire::app {

// "needs a value, not an empty string" for an empty value.
CLI::Validator non_empty_value();

// A dotted IPv4 address ("192.168.1.7").
CLI::Validator ipv4_address_value();

}  // namespace tensorwire::app
