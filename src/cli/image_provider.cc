#include "cli/image_provider.h"

#include "image/agent_image.h"

namespace airlock::cli {

Result<std::string> CliImageProvider::erofsImage(const session::ImageSource& source) {
  if (source.kind == session::ImageSource::Kind::kReference)
    return pulledImagePath(source.value, registry_, settings_, quiet_);
  return image::ensureAgentImage(spec_, [this](const std::string& line) { ui_.progress(line); });
}

}  // namespace airlock::cli
