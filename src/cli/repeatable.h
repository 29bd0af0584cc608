#pragma once
// Repeatable options the Docker way: one value per occurrence (`-e A -e B`),
// so the word after the value is never taken as a second value.

#include <CLI/CLI.hpp>

namespace airlock::cli {

/// Makes a vector option take exactly one value per occurrence and keep all
/// occurrences. CLI11 lets a vector option eat every following non-option
/// word, which swallowed IMAGE in `run-image -e A=1 busybox`.
inline CLI::Option* repeatable(CLI::Option* option) {
  return option->expected(1)->allow_extra_args(false)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace airlock::cli
