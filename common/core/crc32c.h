// CRC-32C (Castagnoli), the checksum of TensorBoard's and TFRecord's records, and its "masked"
// form (rotated and offset, so a CRC stored inside checksummed data does not checksum itself).
#pragma once

#include <cstdint>
#include <string_view>

namespace course {

uint32_t crc32c(std::string_view bytes);

// ((crc >> 15) | (crc << 17)) + 0xa282ead8, as TFRecord stores it.
uint32_t masked_crc32c(std::string_view bytes);

}  // namespace course
