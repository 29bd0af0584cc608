#pragma once
// `airlock config init`: a commented user config with every key.

#include <string>

#include "common/error.h"

namespace airlock::config {

/// The text `airlock config init` writes: every key, commented out, with
/// what it does; it parses to an empty layer.
const std::string& userConfigTemplate();

/// Writes userConfigTemplate() to `path` (0600, parent directories created).
/// Refuses (kUsage) when the file exists, unless `force`.
Result<> writeUserConfig(const std::string& path, bool force);

}  // namespace airlock::config
