#pragma once
// Exports an overlayfs upper directory as an OCI image layer tar (the change
// set format the host's review gate reads): regular files, directories,
// symlinks and hard links as they are; whiteouts (character devices 0/0)
// become `.wh.<name>` entries and opaque directories (xattr
// trusted.overlay.opaque=y) get a `.wh..wh..opq` entry. POSIX ustar with pax
// extended headers for long names and large files. Source: OCI image spec,
// "layer.md" (Representing Changes, Whiteouts). libc only (runs in the guest).

#include <functional>
#include <string>
#include <string_view>

namespace airlock::guest {

/// Receives the tar stream in pieces (each at most 64 KiB).
using TarSink = std::function<bool(std::string_view)>;

/// Walks `upperDir` (without following symlinks) and writes the layer to
/// `sink`. FIFOs and device nodes are written as tar FIFO/device entries,
/// sockets (which tar cannot represent) as FIFOs, so the host can list them
/// as skipped; sockets and unknown types get a note in `skipped`. Returns
/// false with `error` set on failure.
bool exportUpperLayer(const std::string& upperDir, const TarSink& sink, std::string& error, std::string& skipped);

}  // namespace airlock::guest
