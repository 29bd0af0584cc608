#pragma once
// A secret value typed or piped into airlock (`airlock secret set`,
// `airlock login`): never from the command line, where every user can
// read it in /proc.

#include <string>

#include "common/error.h"

namespace airlock::cli {

/// The value `what` describes ("the value of github-token") from standard
/// input. On a terminal (`terminal`), after "Enter WHAT (not shown): ":
/// one line, not echoed (backspace edits, Ctrl-C aborts with 130, a pasted
/// second line is refused). From a pipe or file: every byte, without a final
/// newline when it is the only one (a token from printenv or echo; a
/// multi-line file such as a PEM key is kept byte for byte), reading at most
/// a byte past secrets::kMaxSecretBytes. `command` is the command line named
/// in messages ("airlock secret set NAME"). Errors (64): no value.
Result<std::string> readSecretValue(const std::string& what, bool terminal, const std::string& command);

}  // namespace airlock::cli
