#include "cli/image_provider.h"

#include "cli/guest_install.h"
#include "common/exit_codes.h"
#include "image/agent_image.h"
#include "image/rootfs_image.h"

namespace airlock::cli {

Result<std::string> CliImageProvider::erofsImage(const session::ImageSource& source) {
  auto progress = [this](const std::string& line) { ui_.progress(line); };
  switch (source.kind) {
    case session::ImageSource::Kind::kReference:
      return pulledImagePath(host_, source.value, registry_, settings_, quiet_);
    case session::ImageSource::Kind::kAgentBuild:
      return image::ensureAgentImage(host_.dirs.cache, spec_, progress,
                                     {.guestInstall = buildVmInstaller(host_, ui_), .quiet = quiet_});
    case session::ImageSource::Kind::kRootfsDir:
    case session::ImageSource::Kind::kPath:
      return image::ensureRootfsImage(host_.dirs.cache, source.value, progress);
    case session::ImageSource::Kind::kErofs:
      break;
  }
  return failWith(exit_code::kInternal, "image {} is an erofs file already", source.value);
}

}  // namespace airlock::cli
