#pragma once
// Minimal QMP (QEMU Machine Protocol) client: enough to ask QEMU to quit.

#include <chrono>
#include <string>

#include "common/error.h"

namespace airlock::vm {

/// Connects to the QMP socket, negotiates capabilities and runs one command
/// without arguments (e.g. "quit", "system_powerdown"). Returns QEMU's reply line.
/// The socket path's last component must be the socket itself (not a symlink).
Result<std::string> qmpExecute(const std::string& socketPath, const std::string& command,
                               std::chrono::milliseconds timeout);

}  // namespace airlock::vm
