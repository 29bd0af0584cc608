#pragma once
// The checks of `airlock doctor` that need airlock's sessions (the host
// checks are preflight::runDoctor's).

#include <string>

#include "preflight/doctor.h"

namespace airlock::cli {

/// "dead sessions": sessions under `stateDir` whose airlock process died
/// before their command exited (killed, out of memory, a reboot); warn
/// with their names and the review that shows what they left, else ok.
preflight::CheckResult deadSessionsCheck(const std::string& stateDir);

}  // namespace airlock::cli
