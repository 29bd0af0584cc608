#include "local_registry.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "tar_builder.h"

namespace airlock::test {
namespace {

int freePort() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

bool canConnect(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

void writeFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string registrySkipReason() {
  if (findProgram("docker-registry").empty()) return "docker-registry is not installed (scripts/setup)";
  if (findProgram("skopeo").empty()) return "skopeo is not installed (scripts/setup)";
  if (findProgram("mkfs.erofs").empty()) return "mkfs.erofs is not installed (scripts/setup)";
  if (findProgram("busybox").empty() && access("/bin/busybox", X_OK) != 0) return "busybox is not installed";
  return "";
}

LocalRegistry::LocalRegistry() {
  char tmpl[] = "/tmp/airlock-registry-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  const int port = freePort();
  host_ = "127.0.0.1:" + std::to_string(port);
  writeFile(dir_ + "/config.yml", "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: " + dir_ +
                                      "/data\n  delete:\n    enabled: true\nhttp:\n  addr: " + host_ + "\n");
  pid_ = ::fork();
  if (pid_ == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execlp("docker-registry", "docker-registry", "serve", (dir_ + "/config.yml").c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 200 && !canConnect(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  if (!canConnect(port)) throw std::runtime_error("docker-registry did not start on " + host_);
}

LocalRegistry::~LocalRegistry() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  (void)removeTree(dir_);
}

std::string LocalRegistry::blobFile(const std::string& digest) const {
  std::string hex = digest.substr(7);
  return dir_ + "/data/docker/registry/v2/blobs/sha256/" + hex.substr(0, 2) + "/" + hex + "/data";
}

OciLayout::OciLayout(std::string dir) : dir_(std::move(dir)) {
  if (!makeDirs(dir_ + "/blobs/sha256")) throw std::runtime_error("cannot create " + dir_);
  writeFile(dir_ + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
}

image::oci::Descriptor OciLayout::addBlob(const std::string& data, const std::string& mediaType) {
  image::oci::Descriptor d;
  d.mediaType = mediaType;
  d.digest = "sha256:" + sha256Hex(data);
  d.size = data.size();
  writeFile(dir_ + "/blobs/sha256/" + d.digest.substr(7), data);
  return d;
}

image::oci::Descriptor OciLayout::addImage(const std::vector<image::oci::Descriptor>& layers, const std::string& arch,
                                           const std::vector<std::string>& cmd) {
  nlohmann::json diffIds = nlohmann::json::array();
  nlohmann::json layerList = nlohmann::json::array();
  for (const auto& l : layers) {
    diffIds.push_back(l.digest);  // not checked by airlock or the registry
    layerList.push_back({{"mediaType", l.mediaType}, {"digest", l.digest}, {"size", l.size}});
  }
  nlohmann::json config = {{"architecture", arch},
                           {"os", "linux"},
                           {"config", {{"Env", {"PATH=/bin", "GREETING=hi"}}, {"Cmd", cmd}, {"WorkingDir", "/"}}},
                           {"rootfs", {{"type", "layers"}, {"diff_ids", diffIds}}}};
  auto c = addBlob(config.dump(), "application/vnd.oci.image.config.v1+json");
  nlohmann::json manifest = {{"schemaVersion", 2},
                             {"mediaType", image::oci::kOciManifest},
                             {"config", {{"mediaType", c.mediaType}, {"digest", c.digest}, {"size", c.size}}},
                             {"layers", layerList}};
  return addBlob(manifest.dump(), std::string(image::oci::kOciManifest));
}

image::oci::Descriptor OciLayout::addIndex(const std::vector<std::pair<image::oci::Descriptor, std::string>>& manifests) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [d, arch] : manifests)
    list.push_back({{"mediaType", d.mediaType}, {"digest", d.digest}, {"size", d.size},
                    {"platform", {{"os", "linux"}, {"architecture", arch}}}});
  nlohmann::json index = {{"schemaVersion", 2}, {"mediaType", image::oci::kOciIndex}, {"manifests", list}};
  return addBlob(index.dump(), std::string(image::oci::kOciIndex));
}

void OciLayout::tag(const image::oci::Descriptor& top, const std::string& tag) {
  tags_.emplace_back(top, tag);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [d, t] : tags_)
    list.push_back({{"mediaType", d.mediaType}, {"digest", d.digest}, {"size", d.size},
                    {"annotations", {{"org.opencontainers.image.ref.name", t}}}});
  writeFile(dir_ + "/index.json", nlohmann::json({{"schemaVersion", 2}, {"manifests", list}}).dump());
}

void OciLayout::push(const LocalRegistry& registry, const std::string& repo, const std::string& tag, bool all) const {
  std::vector<std::string> argv = {"skopeo", "copy", "--quiet", "--preserve-digests", "--dest-tls-verify=false"};
  if (all) argv.push_back("--all");
  argv.push_back("oci:" + dir_ + ":" + tag);
  argv.push_back("docker://" + registry.host() + "/" + repo + ":" + tag);
  auto r = runChecked(argv);
  if (!r) throw std::runtime_error("skopeo copy failed: " + r.error().message);
}

std::string busyboxLayer() {
  std::string busybox = readAll(findProgram("busybox").empty() ? "/bin/busybox" : findProgram("busybox"));
  return makeTar({{"bin/", 'd', "", 0755}, {"bin/busybox", 'f', busybox, 0755}, {"bin/sh", 'l', "busybox"},
                  {"etc/", 'd', "", 0755}, {"etc/passwd", 'f', "root:x:0:0:root:/root:/bin/sh\napp:x:1234:99::/home/app:/bin/sh\n"}},
                 "gzip");
}

}  // namespace airlock::test
