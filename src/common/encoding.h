#pragma once
// Byte encodings used across airlock: lowercase hex and base64 (RFC 4648),
// both through OpenSSL's EVP coders, a human byte-size format, and UTC
// timestamps.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"

namespace airlock {

/// Lowercase hex of `bytes` (two characters per byte).
std::string hexEncode(std::string_view bytes);

/// Base64 (RFC 4648 section 4, with '=' padding).
std::string base64Encode(std::string_view bytes);

/// Strict base64 (RFC 4648 section 4): ASCII whitespace is ignored, padding is
/// optional, but any other character, data after padding, more than two '='
/// or a dangling 6-bit group is refused (the error says which).
Result<std::string> base64Decode(std::string_view text);

/// A byte count for people: "512 B", "3.0 KiB", "1.5 MiB", "2.1 GiB" (binary
/// units, one decimal, the largest unit that keeps the number at least 1).
std::string formatBytes(uint64_t bytes);

/// `unixSeconds` as an RFC 3339 UTC timestamp: "2026-12-04T13:00:00Z".
std::string formatUtcTime(int64_t unixSeconds);

/// `text` with A-Z mapped to a-z and every other byte as it is (the case
/// folding of DNS names, HTTP field names and git's path checks; no locale).
std::string asciiLower(std::string_view text);

/// `text` as one POSIX shell word in single quotes (a ' inside becomes '\'').
std::string shellQuoted(std::string_view text);

/// The deepest nesting of [ and { in JSON text, outside strings (in
/// comments too: only ever an overestimate). nlohmann::json parses any
/// depth, but copying or dumping a value recurses: untrusted JSON deeper
/// than a few hundred levels is refused before it is parsed.
size_t jsonDepth(std::string_view text);

}  // namespace airlock
