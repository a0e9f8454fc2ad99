// Quantities as people write them in scenario files: "100Gbps", "12.5GB/s",
// "1.5us", "16MiB". Each parser returns the value in the project's base unit
// (bytes per second, nanoseconds, bytes) or an error that says what was wrong
// and what would have been accepted.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"

namespace tensorwire {

// A positive, finite rate. Bits: bps, Kbps, Mbps, Gbps, Tbps (also b/s, Gb/s,
// Gbit/s). Bytes: B/s, KB/s, MB/s, GB/s, TB/s (also GBps), and binary KiB/s,
// MiB/s, GiB/s, TiB/s. Prefix letters may be either case; 'b' is a bit and 'B'
// a byte. Decimal prefixes are powers of 1000, binary ones of 1024.
Result<double> parse_bandwidth_bytes_per_s(std::string_view text);

// A non-negative duration: ns, us (also µs, μs), ms, s. Fractions round to the
// nearest nanosecond ("1.5us" = 1500, "0.4ns" = 0). A bare "0" is accepted.
Result<TimeNs> parse_duration_ns(std::string_view text);

// A non-negative whole number of bytes: a bare integer, or B, KB, MB, GB, TB
// (powers of 1000), KiB, MiB, GiB, TiB (powers of 1024). "1.5KiB" = 1536;
// "1.5B" is not a whole number of bytes and is rejected.
Result<uint64_t> parse_bytes(std::string_view text);

}  // namespace tensorwire
