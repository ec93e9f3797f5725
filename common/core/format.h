// Human-readable figures for logs and reports.
#pragma once

#include <cstdint>
#include <string>

namespace course {

std::string format_bytes(int64_t bytes);      // "512 B", "1.50 MiB", "2.00 GiB"
std::string format_number(double value);      // printf's %g: "0.1", "1e-08", "2048"
std::string format_percent(double fraction);  // two decimals, no sign: 0.91234 -> "91.23"

}  // namespace course
