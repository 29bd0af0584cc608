#pragma once
// The build VM of a PyPI agent's image (image/pypi_packages.h) the way the
// CLI runs it: one session::Runner on a snapshot of the build's workspace
// directory, as root in the guest, behind the egress firewall with only the
// install's hosts (none: no network), its change set handed to the image
// build, then the session removed.

#include "common/host_context.h"
#include "image/pypi_packages.h"
#include "session/ui.h"

namespace airlock::cli {

/// A GuestInstaller booting real VMs; `host` and `ui` (where the progress
/// lines and pip's output go) must outlive it.
image::GuestInstaller buildVmInstaller(const HostContext& host, session::Ui& ui);

}  // namespace airlock::cli
