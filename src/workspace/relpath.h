#pragma once
// Workspace-relative paths: '/'-separated byte strings with no leading '/',
// no '.' or '..' components and no empty components. The workspace root is "".
// Names are arbitrary bytes (newlines, non-UTF-8, leading dashes are legal);
// percentEncode() makes them safe for line-based state files.

#include <string>
#include <string_view>

#include "common/error.h"

namespace airlock::workspace {

/// Normalizes an untrusted relative name (e.g. a tar entry name): strips leading
/// "./" and a trailing '/', collapses repeated '/'. Fails, naming `raw`, on an
/// empty name, an absolute path, a '.' or '..' component, an embedded NUL, a
/// component over 255 bytes or a path over 4096 bytes. The name "." or "./"
/// normalizes to "" (the root).
Result<std::string> normalizeRelative(std::string_view raw);

/// Parent of a relative path ("" for a top-level name).
std::string_view parentPath(std::string_view rel);

/// Last component of a relative path.
std::string_view baseName(std::string_view rel);

/// Number of components ("a/b" -> 2, "" -> 0).
size_t pathDepth(std::string_view rel);

/// Encodes '%', bytes below 0x21, 0x7f and above as %XX so the result contains
/// no whitespace, newline or non-ASCII byte. Reversible with percentDecode().
std::string percentEncode(std::string_view raw);

/// Inverse of percentEncode(). Fails on a malformed escape.
Result<std::string> percentDecode(std::string_view encoded);

/// A name for messages: the path with control, invisible, bidi and non-UTF-8
/// characters and backslashes escaped (visibleText() notation: \xNN, \uNNNN).
std::string displayPath(std::string_view rel);

}  // namespace airlock::workspace
