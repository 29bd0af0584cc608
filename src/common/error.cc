#include "common/error.h"

#include <cstring>

namespace airlock {

std::string errnoText(int err) { return fmt::format("{} (errno {})", std::strerror(err), err); }

}  // namespace airlock
