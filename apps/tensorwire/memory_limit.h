// --memory-limit: what a payload-mode simulation may hold in memory over all
// its ranks, and the estimate printed (and checked) before a large run. The
// default is read from the machine (/proc/meminfo), which only apps/ and
// launch/ may do: the simulator gets a number (Scenario::payload_limit_bytes_total).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "scenario/scenario.h"

namespace tensorwire::app {

// Adds --memory-limit SIZE to a command; `text` stays empty when not given.
// The value is checked as it is parsed: a size ("16GiB", "512MiB", bytes)
// above 0, else an error naming the flag.
void add_memory_limit_option(CLI::App& command, std::string& text);

// The size `text` names (parse_bytes, above 0); nullopt when it names none.
std::optional<uint64_t> parse_memory_limit(const std::string& text);

// The default limit: half of the machine's memory (MemTotal in
// /proc/meminfo), so that a run leaves room for everything else; 8 GiB where
// that cannot be read.
uint64_t default_memory_limit_bytes();

// The limit asked for with --memory-limit (`text`, already checked), or the default.
uint64_t memory_limit_bytes(const std::string& text);

// Estimates at least this large are printed before the run.
inline constexpr uint64_t kPrintedEstimateMinBytes = 1ull << 30;

// What `run` and `check` do before a payload-mode simulation: bound it by the
// limit `limit_text` asks for (or the default), estimate what it would hold,
// print "payload memory: about X (limit Y)" on `out` when that is large, and
// give back the sentence an error says when the estimate passes the limit
// (nullopt: the run may start).
std::optional<std::string> payload_memory_over_limit(const std::string& limit_text,
                                                     Scenario& scenario, std::ostream& out);

}  // namespace tensorwire::app
