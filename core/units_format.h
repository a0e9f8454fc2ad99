// Numbers as people read them: "1.50 MiB", "12.3 us". Plain C-locale
// formatting, so the same value prints the same on every machine.
#pragma once

#include <cstdint>
#include <string>

namespace tensorwire {

// Binary units with three significant digits: "512 B", "1.50 KiB", "12.5 MiB",
// "640 MiB", "1.00 GiB", up to "EiB".
std::string format_bytes(uint64_t bytes);

// Three significant digits with the largest unit that keeps the value >= 1:
// "850 ns", "12.3 us", "1.23 ms", "4.50 s". Negative durations keep their sign.
std::string format_duration_ns(int64_t duration_ns);

// An integer with thousands separators: 1234567 -> "1,234,567".
std::string format_count(uint64_t count);

}  // namespace tensorwire
