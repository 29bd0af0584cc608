#pragma once
// A token that never changes, for a broker route (--git-token's): nothing
// refreshes it, so a server that refuses it gets the user told which token
// to check.

#include <string>

#include "secrets/login_tokens.h"

namespace airlock::secrets {

class FixedToken final : public TokenSource {
 public:
  /// `value` is the token; `source` names where it came from in messages ("env:GITHUB_TOKEN").
  FixedToken(std::string value, std::string source) : value_(std::move(value)), source_(std::move(source)) {}
  Result<std::string> token() override { return value_; }
  /// Always an error naming the source: there is nothing to refresh with.
  Result<std::string> replaceRejected(const std::string&) override {
    return fail("the git host refused the token from {} (--git-token): check that it is valid and may push there",
                source_);
  }

 private:
  std::string value_;
  std::string source_;
};

}  // namespace airlock::secrets
