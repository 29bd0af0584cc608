#pragma once
// Scratch directories for tests: one per test, removed with its contents.

#include <string>

#include "common/paths.h"

namespace airlock::test {

/// A fresh directory "<dir>/<prefix>XXXXXX" under $TMPDIR (else /tmp),
/// removed with its contents when the TempDir goes; a failure to create it
/// aborts the test binary (nothing could run without it).
TempDir scratchDir(const std::string& prefix = "airlock-test-");

}  // namespace airlock::test
