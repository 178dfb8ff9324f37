// SHA-256 of a byte string, as lower-case hex (OpenSSL libcrypto, EVP interface).
#pragma once

#include <string>
#include <string_view>

namespace stockade::tools {

std::string sha256_hex(std::string_view bytes);

}  // namespace stockade::tools
