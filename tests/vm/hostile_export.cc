// The exporter of a hostile airlock-init (issue 12): it stands in for a guest
// whose kernel or init the agent controls. Linked into `hostile-airlock-init`
// (tests only) in place of src/guest/layer_export.cc; what it does is read
// from /hostile-export, written by the test as root in the guest:
//   silent   never answers (blocks the guest's control loop for good)
//   endless  streams zeros without end
// Anything else: an export error.

#include <unistd.h>

#include <fstream>
#include <string>

#include "guest/layer_export.h"

namespace airlock::guest {

bool exportUpperLayer(const std::string&, const TarSink& sink, std::string& error, std::string&) {
  std::string mode;
  std::ifstream("/hostile-export") >> mode;
  if (mode == "silent")
    for (;;) pause();
  if (mode == "endless") {
    std::string zeros(64u << 10, '\0');
    while (sink(zeros)) {
    }
  }
  error = "hostile exporter: no mode in /hostile-export";
  return false;
}

}  // namespace airlock::guest
