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

#include <archive.h>
#include <archive_entry.h>
#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "common/sha256.h"
#include "common/subprocess.h"
#include "support/tar_builder.h"

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

void run(const std::vector<std::string>& argv) {
  auto r = runChecked(argv);
  if (!r) throw std::runtime_error(argv[0] + " failed: " + r.error().message);
}

void waitForPort(int port, const std::string& what) {
  for (int i = 0; i < 200 && !canConnect(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  if (!canConnect(port)) throw std::runtime_error(what + " did not start on port " + std::to_string(port));
}

// A token server for the registry's `auth: token` (docker token protocol):
// GET /token?service=S&scope=repository:NAME:ACTIONS with HTTP Basic
// credentials, checked against the htpasswd file with `htpasswd -vb`; answers
// {"token": JWT} (RS256, the signing certificate in the x5c header, which the
// registry verifies against its rootcertbundle) or 401.
constexpr const char* kTokenServer = R"PY(
import base64, http.server, json, subprocess, sys, time, urllib.parse, uuid
import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization

port, htpasswd, key_file, cert_file, issuer = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
key = open(key_file, 'rb').read()
cert = x509.load_pem_x509_certificate(open(cert_file, 'rb').read())
x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def deny(self):
        self.send_response(401)
        self.send_header('WWW-Authenticate', 'Basic realm="airlock-test"')
        self.send_header('Content-Type', 'application/json')
        self.end_headers()
        self.wfile.write(b'{"errors":[{"code":"UNAUTHORIZED","message":"wrong user name or password"}]}')

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path != '/token':
            self.send_response(404)
            self.end_headers()
            return
        auth = self.headers.get('Authorization', '')
        if not auth.startswith('Basic '):
            return self.deny()
        try:
            user, password = base64.b64decode(auth[6:]).decode().split(':', 1)
        except Exception:
            return self.deny()
        if subprocess.run(['htpasswd', '-vb', htpasswd, user, password], capture_output=True).returncode != 0:
            return self.deny()
        query = urllib.parse.parse_qs(url.query)
        access = []
        for scope in query.get('scope', []):
            for one in scope.split(' '):
                parts = one.split(':')
                if len(parts) >= 3 and parts[0] == 'repository':
                    access.append({'type': 'repository', 'name': ':'.join(parts[1:-1]),
                                   'actions': parts[-1].split(',')})
        now = int(time.time())
        claims = {'iss': issuer, 'sub': user, 'aud': query.get('service', [''])[0], 'iat': now, 'nbf': now - 10,
                  'exp': now + 300, 'jti': str(uuid.uuid4()), 'access': access}
        token = jwt.encode(claims, key, algorithm='RS256', headers={'x5c': [x5c]})
        body = json.dumps({'token': token, 'access_token': token, 'expires_in': 300}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

http.server.ThreadingHTTPServer(('127.0.0.1', int(port)), Handler).serve_forever()
)PY";

constexpr const char* kPython = "/usr/bin/python3";  // Debian's, with python3-jwt and python3-cryptography

}  // namespace

std::string securedRegistrySkipReason(const RegistrySecurity& security) {
  if (auto why = registrySkipReason(); !why.empty()) return why;
  if (security.tls && findProgram("openssl").empty()) return "openssl is not installed (scripts/setup)";
  if (security.auth != RegistrySecurity::Auth::None && findProgram("htpasswd").empty())
    return "htpasswd is not installed (apache2-utils, scripts/setup)";
  if (security.auth == RegistrySecurity::Auth::Token) {
    auto r = runCommand({kPython, "-c", "import jwt, cryptography"});
    if (!r || r->exitCode != 0) return "python3-jwt and python3-cryptography are not installed (scripts/setup)";
  }
  return "";
}

void RegistryFixture::SetUp() {
  if (auto why = registrySkipReason(); !why.empty()) GTEST_SKIP() << why;
  registry_ = std::make_unique<LocalRegistry>();
  auto t = TempDir::create("/tmp", "airlock-registry-test-");
  ASSERT_TRUE(t) << t.error().message;
  tmp_.emplace(std::move(*t));
  layout_ = std::make_unique<OciLayout>(tmp_->path() + "/layout");
}

image::oci::ImageRef RegistryFixture::ref(const std::string& repoTag) const {
  return *image::oci::parseImageRef(registry_->host() + "/" + repoTag);
}

std::vector<std::string> RegistryFixture::namesIn(const std::string& dir) {
  std::vector<std::string> names;
  auto out = runCommand({"ls", "-A", dir});
  std::string line;
  std::istringstream in(out ? out->stdoutText : "");
  while (std::getline(in, line)) names.push_back(line);
  return names;
}

std::string registrySkipReason() {
  if (findProgram("docker-registry").empty()) return "docker-registry is not installed (scripts/setup)";
  if (findProgram("skopeo").empty()) return "skopeo is not installed (scripts/setup)";
  if (findProgram("mkfs.erofs").empty()) return "mkfs.erofs is not installed (scripts/setup)";
  if (findProgram("busybox").empty() && access("/bin/busybox", X_OK) != 0) return "busybox is not installed";
  return "";
}

LocalRegistry::LocalRegistry(RegistrySecurity security) : security_(std::move(security)) {
  char tmpl[] = "/tmp/airlock-registry-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  const int port = freePort();
  host_ = "127.0.0.1:" + std::to_string(port);
  std::string config = "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: " + dir_ +
                       "/data\n  delete:\n    enabled: true\nhttp:\n  addr: " + host_ + "\n";
  if (security_.tls) {
    // A CA, and a server certificate for 127.0.0.1 signed by it.
    run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=airlock test CA",
         "-keyout", dir_ + "/ca.key", "-out", dir_ + "/ca.crt", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"});
    run({"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", dir_ + "/server.key",
         "-out", dir_ + "/server.csr"});
    writeFile(dir_ + "/server.ext", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
    run({"openssl", "x509", "-req", "-in", dir_ + "/server.csr", "-CA", dir_ + "/ca.crt", "-CAkey", dir_ + "/ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", dir_ + "/server.ext", "-out", dir_ + "/server.crt"});
    config += "  tls:\n    certificate: " + dir_ + "/server.crt\n    key: " + dir_ + "/server.key\n";
  }
  if (security_.auth != RegistrySecurity::Auth::None)
    run({"htpasswd", "-B", "-b", "-c", dir_ + "/htpasswd", security_.user, security_.password});
  if (security_.auth == RegistrySecurity::Auth::Htpasswd)
    config += "auth:\n  htpasswd:\n    realm: airlock-test\n    path: " + dir_ + "/htpasswd\n";
  if (security_.auth == RegistrySecurity::Auth::Token) {
    const int tokenPort = freePort();
    run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=airlock test token issuer",
         "-keyout", dir_ + "/token.key", "-out", dir_ + "/token.crt"});
    config += "auth:\n  token:\n    realm: http://127.0.0.1:" + std::to_string(tokenPort) +
              "/token\n    service: airlock-test-registry\n    issuer: airlock-test-issuer\n    rootcertbundle: " +
              dir_ + "/token.crt\n";
    startTokenServer(tokenPort);
  }
  writeFile(dir_ + "/config.yml", config);
  pid_ = ::fork();
  if (pid_ == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execlp("docker-registry", "docker-registry", "serve", (dir_ + "/config.yml").c_str(), nullptr);
    ::_exit(127);
  }
  waitForPort(port, "docker-registry");
}

void LocalRegistry::startTokenServer(int port) {
  writeFile(dir_ + "/token_server.py", kTokenServer);
  tokenPid_ = ::fork();
  if (tokenPid_ == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(kPython, "python3", (dir_ + "/token_server.py").c_str(), std::to_string(port).c_str(),
            (dir_ + "/htpasswd").c_str(), (dir_ + "/token.key").c_str(), (dir_ + "/token.crt").c_str(),
            "airlock-test-issuer", nullptr);
    ::_exit(127);
  }
  waitForPort(port, "the token server");
}

LocalRegistry::~LocalRegistry() {
  for (pid_t p : {pid_, tokenPid_})
    if (p > 0) {
      ::kill(p, SIGTERM);
      ::waitpid(p, nullptr, 0);
    }
  (void)removeTree(dir_);
}

std::string LocalRegistry::dockerConfig(const std::string& user, const std::string& password) const {
  static int n = 0;
  std::string dir = dir_ + "/docker-config-" + std::to_string(++n);
  if (!makeDirs(dir)) throw std::runtime_error("cannot create " + dir);
  std::string raw = user + ":" + password;
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < raw.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(raw[i])) << 16;
    if (i + 1 < raw.size()) v |= uint32_t(uint8_t(raw[i + 1])) << 8;
    if (i + 2 < raw.size()) v |= uint8_t(raw[i + 2]);
    b64 += tbl[(v >> 18) & 63];
    b64 += tbl[(v >> 12) & 63];
    b64 += i + 1 < raw.size() ? tbl[(v >> 6) & 63] : '=';
    b64 += i + 2 < raw.size() ? tbl[v & 63] : '=';
  }
  writeFile(dir + "/config.json", nlohmann::json({{"auths", {{host_, {{"auth", b64}}}}}}).dump());
  return dir;
}

std::vector<std::string> LocalRegistry::skopeoDestFlags() const {
  std::vector<std::string> flags = {"--dest-tls-verify=false"};
  if (security_.auth != RegistrySecurity::Auth::None)
    flags.push_back("--dest-creds=" + security_.user + ":" + security_.password);
  return flags;
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

std::string uncompressedDigest(const std::string& blob) {
  archive* a = archive_read_new();
  archive_read_support_format_raw(a);
  archive_read_support_filter_all(a);
  archive_entry* e = nullptr;
  if (archive_read_open_memory(a, blob.data(), blob.size()) != ARCHIVE_OK || archive_read_next_header(a, &e) != ARCHIVE_OK)
    throw std::runtime_error("cannot decompress a test layer");
  Sha256 h;
  char buf[65536];
  for (la_ssize_t n; (n = archive_read_data(a, buf, sizeof buf)) > 0;) h.update(std::string_view(buf, static_cast<size_t>(n)));
  archive_read_free(a);
  return "sha256:" + h.hex();
}

image::oci::Descriptor OciLayout::addImage(const std::vector<image::oci::Descriptor>& layers, const std::string& arch,
                                           const std::vector<std::string>& cmd, const std::vector<std::string>& diffIdsIn) {
  nlohmann::json diffIds = nlohmann::json::array();
  nlohmann::json layerList = nlohmann::json::array();
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    diffIds.push_back(i < diffIdsIn.size() ? diffIdsIn[i]
                                           : uncompressedDigest(readAll(dir_ + "/blobs/sha256/" + l.digest.substr(7))));
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
  std::vector<std::string> argv = {"skopeo", "copy", "--quiet", "--preserve-digests"};
  for (const auto& f : registry.skopeoDestFlags()) argv.push_back(f);
  if (all) argv.push_back("--all");
  argv.push_back("oci:" + dir_ + ":" + tag);
  argv.push_back("docker://" + registry.host() + "/" + repo + ":" + tag);
  auto r = runChecked(argv);
  if (!r) throw std::runtime_error("skopeo copy failed: " + r.error().message);
}

std::string busyboxLayer() {
  std::string busybox = readAll(findProgram("busybox").empty() ? "/bin/busybox" : findProgram("busybox"));
  return makeTar({{"bin/", 'd', "", "", 0755}, {"bin/busybox", 'f', busybox, "", 0755}, {"bin/sh", 'l', "", "busybox"},
                  {"etc/", 'd', "", "", 0755}, {"etc/passwd", 'f', "root:x:0:0:root:/root:/bin/sh\napp:x:1234:99::/home/app:/bin/sh\n"}},
                 "gzip");
}

}  // namespace airlock::test
