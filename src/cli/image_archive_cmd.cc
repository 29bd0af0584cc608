// `airlock image save IMAGE -o FILE` and `airlock image load -i FILE`: an
// image of the store as an OCI image layout tar (src/image/oci/image_archive.h).

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/report.h"
#include "common/exit_codes.h"
#include "image/oci/image_archive.h"

namespace airlock::cli {
namespace {

struct SaveArgs {
  std::string ref;
  std::string output;
  bool quiet = false;
};

struct LoadArgs {
  std::string input;
  std::string name;
  std::string platform = "linux/amd64";
  bool quiet = false;
};

int save(const HostContext& host, const SaveArgs& args) {
  auto ref = image::oci::parseImageRef(args.ref);
  if (!ref) return reportError(ref.error());
  if (args.output == "-" && host.terminal.stdoutTty)
    return reportError({"refusing to write a tar to the terminal: redirect stdout (-o - > image.tar) or give -o FILE",
                        exit_code::kUsage});
  auto r = image::oci::saveImage(image::oci::ImageStore::inCache(host.dirs.cache), *ref, args.output);
  if (!r) return reportError(r.error());
  if (!args.quiet)
    std::fprintf(stderr, "airlock: saved %s (%s, %llu blobs, %.1f MiB) to %s\n", ref->name().c_str(),
                 r->manifestDigest.c_str(), static_cast<unsigned long long>(r->blobs), double(r->bytes) / (1 << 20),
                 args.output == "-" ? "stdout" : args.output.c_str());
  return 0;
}

int load(const HostContext& host, const LoadArgs& args) {
  image::oci::LoadOptions o;
  o.name = args.name;
  auto platform = image::oci::parsePlatform(args.platform);
  if (!platform) return reportError(Error{"--platform: " + platform.error().message, exit_code::kUsage});
  o.build.platform = *platform;
  if (!args.quiet) o.build.progress = [](const std::string& line) { std::fprintf(stderr, "airlock: %s\n", line.c_str()); };
  auto refs = image::oci::loadImageArchive(image::oci::ImageStore::inCache(host.dirs.cache), args.input, o);
  if (!refs) return reportError(refs.error());
  for (const auto& r : *refs) std::printf("%s %s\n", r.name.c_str(), r.manifestDigest.c_str());
  return 0;
}

}  // namespace

void addImageArchiveCommands(CLI::App& image, int& exitCode, const HostContext& host) {
  auto saveArgs = std::make_shared<SaveArgs>();
  auto* saveCmd = image.add_subcommand("save", "Write an image of the store as an OCI image layout tar");
  saveCmd->footer(R"(The tar holds oci-layout, index.json and blobs/sha256/ (manifest, config, layers), the
form skopeo reads as oci-archive:FILE, e.g. to push it to a registry:
  airlock image save 127.0.0.1:5000/team/agent:dev -o agent.tar
  skopeo copy oci-archive:agent.tar docker://registry.example.com/team/agent:dev)");
  saveCmd->add_option("IMAGE", saveArgs->ref, "Image reference (as in `airlock image ls`)")->required();
  saveCmd->add_option("-o,--output", saveArgs->output, "The tar file to write; - for stdout (not a terminal)")->required();
  saveCmd->add_flag("-q,--quiet", saveArgs->quiet, "Do not print the summary line");
  saveCmd->callback([saveArgs, &exitCode, &host] { exitCode = save(host, *saveArgs); });

  auto loadArgs = std::make_shared<LoadArgs>();
  auto* loadCmd = image.add_subcommand("load", "Load the images of an OCI image layout tar into the store");
  loadCmd->footer(R"(The tar is untrusted: only the layout's own entries are accepted (tar safety rules as for
layers), every blob must hash to its name, and each layer must match the config's diff_ids.
Images are named by index.json (org.opencontainers.image.ref.name holding a full reference)
or by --name. Prints "NAME DIGEST" per image. Refused archives exit 67 and leave nothing behind.
  skopeo copy docker://registry.example.com/team/agent:dev oci-archive:agent.tar
  airlock image load -i agent.tar --name registry.example.com/team/agent:dev)");
  loadCmd->add_option("-i,--input", loadArgs->input, "The tar file to read")->required()->check(CLI::ExistingFile);
  loadCmd->add_option("--name", loadArgs->name, "Store the (single) image under this reference");
  loadCmd->add_option("--platform", loadArgs->platform, "Platform to pick from a multi-arch archive");
  loadCmd->add_flag("-q,--quiet", loadArgs->quiet, "Do not print progress lines");
  loadCmd->callback([loadArgs, &exitCode, &host] { exitCode = load(host, *loadArgs); });
}

}  // namespace airlock::cli
