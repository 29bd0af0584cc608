#include "common/token_prefixes.h"

namespace airlock {

bool startsLikeToken(std::string_view word) {
  for (std::string_view prefix : kTokenPrefixes)
    if (word.starts_with(prefix)) return true;
  return false;
}

}  // namespace airlock
