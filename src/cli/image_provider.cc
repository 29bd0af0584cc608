#include "cli/image_provider.h"

#include "common/exit_codes.h"
#include "image/agent_image.h"

namespace airlock::cli {

Result<std::string> CliImageProvider::erofsImage(const session::ImageSource& source) {
  switch (source.kind) {
    case session::ImageSource::Kind::kReference:
      return pulledImagePath(source.value, registry_, settings_, quiet_);
    case session::ImageSource::Kind::kAgentBuild:
      return image::ensureAgentImage(spec_, [this](const std::string& line) { ui_.progress(line); });
    default:
      return failWith(exit_code::kInternal, "image {} is a path, not something to pull or build", source.value);
  }
}

}  // namespace airlock::cli
