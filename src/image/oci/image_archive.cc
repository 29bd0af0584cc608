#include "image/oci/image_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/sha256.h"
#include "common/file_lock.h"
#include "workspace/relpath.h"
#include "workspace/tar_reader.h"

namespace airlock::image::oci {
namespace {

using nlohmann::json;
using workspace::displayPath;
using workspace::EntryType;
using workspace::TarEntryKind;

constexpr std::string_view kRefName = "org.opencontainers.image.ref.name";
constexpr std::string_view kContainerdName = "io.containerd.image.name";
constexpr std::string_view kBlobDir = "blobs/sha256/";

struct ReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};

std::string archiveError(archive* a) {
  const char* s = archive_error_string(a);
  return s ? s : "unknown error";
}

// A file created next to `path` under a unique temporary name, removed
// unless commit() renamed it into place.
class TempFile {
 public:
  static Result<TempFile> create(const std::string& path) {
    std::string tmpl = path + ".tmp-XXXXXX";
    int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd < 0) {
      // A directory that does not exist or is not writable is the user's to fix.
      int err = errno;
      bool user = err == ENOENT || err == ENOTDIR || err == EACCES || err == EROFS;
      return failWith(user ? exit_code::kUsage : exit_code::kImage, "cannot write {}: {}{}", path, errnoText(err),
                      user ? " (give -o a file in an existing, writable directory)" : "");
    }
    return TempFile(Fd(fd), std::move(tmpl));
  }
  TempFile(TempFile&& o) noexcept : fd_(std::move(o.fd_)), name_(std::move(o.name_)) { o.name_.clear(); }
  ~TempFile() {
    if (!name_.empty()) ::unlink(name_.c_str());
  }
  int fd() const { return fd_.get(); }
  // fsyncs and renames to `path`; with `keepExisting`, an existing `path` wins.
  Result<> commit(const std::string& path, bool keepExisting) {
    if (::fsync(fd_.get()) != 0) return failWith(exit_code::kImage, "cannot write {}: {}", path, errnoText(errno));
    if (keepExisting && pathExists(path)) return {};
    if (::fchmod(fd_.get(), 0644) != 0 || ::rename(name_.c_str(), path.c_str()) != 0)
      return failWith(exit_code::kImage, "cannot move {} into place: {}", path, errnoText(errno));
    name_.clear();
    return {};
  }

 private:
  TempFile(Fd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  Fd fd_;
  std::string name_;
};

// ---- save -------------------------------------------------------------------

class TarWriter {
 public:
  explicit TarWriter(int fd) : a_(archive_write_new()) {
    archive_write_set_format_pax_restricted(a_.get());
    ok_ = archive_write_open_fd(a_.get(), fd) == ARCHIVE_OK;
  }
  Result<> dir(const std::string& name) { return header(name, AE_IFDIR, 0755, 0); }
  Result<> file(const std::string& name, std::string_view data) {
    if (auto r = header(name, AE_IFREG, 0644, data.size()); !r) return r;
    return write(name, data);
  }
  // Streams blob `digest` from `path`, checking its digest on the way.
  Result<uint64_t> blob(const std::string& digest, const std::string& path) {
    Fd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    struct stat st {};
    if (!in || ::fstat(in.get(), &st) != 0)
      return failWith(exit_code::kImage, "the store lacks blob {} ({}); pull the image again", digest, errnoText(errno));
    const std::string name = std::string(kBlobDir) + digest.substr(7);
    if (auto r = header(name, AE_IFREG, 0644, static_cast<uint64_t>(st.st_size)); !r) return std::unexpected(r.error());
    Sha256 h;
    std::vector<char> buf(1 << 17);
    uint64_t total = 0;
    for (;;) {
      ssize_t n = ::read(in.get(), buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return failWith(exit_code::kImage, "cannot read {}: {}", path, errnoText(errno));
      if (n == 0) break;
      std::string_view chunk(buf.data(), static_cast<size_t>(n));
      h.update(chunk);
      total += static_cast<uint64_t>(n);
      if (auto r = write(name, chunk); !r) return std::unexpected(r.error());
    }
    if (total != static_cast<uint64_t>(st.st_size) || "sha256:" + h.hex() != digest)
      return failWith(exit_code::kImage, "blob {} in the store is corrupt; remove the image and pull it again", digest);
    return total;
  }
  Result<> close() {
    if (!ok_ || archive_write_close(a_.get()) != ARCHIVE_OK)
      return failWith(exit_code::kImage, "cannot write the archive: {}", archiveError(a_.get()));
    return {};
  }

 private:
  Result<> header(const std::string& name, unsigned type, unsigned mode, uint64_t size) {
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> e(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_filetype(e.get(), type);
    archive_entry_set_perm(e.get(), mode);
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(size));
    archive_entry_set_mtime(e.get(), 0, 0);
    if (!ok_ || archive_write_header(a_.get(), e.get()) != ARCHIVE_OK)
      return failWith(exit_code::kImage, "cannot write {} to the archive: {}", name, archiveError(a_.get()));
    return {};
  }
  Result<> write(const std::string& name, std::string_view data) {
    if (!data.empty() && archive_write_data(a_.get(), data.data(), data.size()) != static_cast<la_ssize_t>(data.size()))
      return failWith(exit_code::kImage, "cannot write {} to the archive: {}", name, archiveError(a_.get()));
    return {};
  }
  std::unique_ptr<archive, WriteFree> a_;
  bool ok_ = false;
};

// ---- load -------------------------------------------------------------------

bool isHexName(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// Reads an OCI layout tar: small metadata files into memory, blobs into the
// store (verified), and nothing else.
class LayoutReader {
 public:
  LayoutReader(const ImageStore& store, const std::string& path, const workspace::TarLimits& limits)
      : store_(store), path_(path), limits_(limits) {}

  Result<> run() {
    std::unique_ptr<archive, ReadFree> a(archive_read_new());
    archive_read_support_format_tar(a.get());
    archive_read_support_format_gnutar(a.get());
    archive_read_support_filter_gzip(a.get());
    archive_read_support_filter_zstd(a.get());
    archive_read_support_filter_none(a.get());
    if (archive_read_open_filename(a.get(), path_.c_str(), 1 << 17) != ARCHIVE_OK)
      return failWith(exit_code::kImage, "cannot open {}: {}", path_, archiveError(a.get()));
    workspace::TarReader reader(a.get(), limits_, "the image archive");
    reader_ = &reader;
    for (;;) {
      auto e = reader.next();
      if (!e) return refuse(e.error().message);
      if (!*e) break;
      if (auto r = handle(**e); !r) return refuse(r.error().message);
    }
    if (!layoutSeen_) return refuse("it has no oci-layout file; it is not an OCI image layout");
    json layout = json::parse(layout_, nullptr, false);
    if (!layout.is_object() || layout.value("imageLayoutVersion", json()) != "1.0.0")
      return refuse("its oci-layout file does not declare imageLayoutVersion 1.0.0");
    if (!indexSeen_) return refuse("it has no index.json");
    return {};
  }

  const std::string& index() const { return index_; }
  const std::set<std::string>& blobs() const { return blobs_; }

 private:
  Result<> refuse(const std::string& why) {
    return failWith(exit_code::kImage, "the image archive {} was refused: {}", path_, why);
  }

  Result<> handle(const workspace::TarEntry& e) {
    if (e.path.empty()) return {};
    if (e.kind == TarEntryKind::Dir) {
      if (e.path != "blobs" && e.path != "blobs/sha256")
        return fail("directory '{}' is not part of an OCI image layout", displayPath(e.path));
      reader_->note(e.path, EntryType::Dir);
      return {};
    }
    if (e.kind != TarEntryKind::File)
      return fail("entry '{}' is not a regular file; an OCI image layout holds only files and directories",
                  displayPath(e.path));
    reader_->note(e.path, EntryType::File);
    if (e.path == "oci-layout") return small(e.path, layout_, layoutSeen_, 4096);
    if (e.path == "index.json") return small(e.path, index_, indexSeen_, 4 << 20);
    if (e.path.starts_with(kBlobDir) && isHexName(std::string_view(e.path).substr(kBlobDir.size())))
      return blob(e.path, "sha256:" + e.path.substr(kBlobDir.size()));
    return fail("entry '{}' is not part of an OCI image layout", displayPath(e.path));
  }

  Result<> small(const std::string& path, std::string& out, bool& seen, size_t limit) {
    if (seen) return fail("entry '{}' appears twice", path);
    seen = true;
    auto n = reader_->readContent(path, [&](std::string_view chunk) -> Result<> {
      if (out.size() + chunk.size() > limit) return fail("'{}' is larger than {} bytes", path, limit);
      out.append(chunk);
      return {};
    });
    if (!n) return std::unexpected(n.error());
    return {};
  }

  Result<> blob(const std::string& path, const std::string& digest) {
    const std::string dest = store_.blobPath(digest);
    auto tmp = TempFile::create(dest);
    if (!tmp) return std::unexpected(tmp.error());
    Sha256 h;
    auto n = reader_->readContent(path, [&](std::string_view chunk) -> Result<> {
      h.update(chunk);
      if (!writeAll(tmp->fd(), chunk)) return fail("cannot write {}: {}", dest, errnoText(errno));
      return {};
    });
    if (!n) return std::unexpected(n.error());
    const std::string actual = "sha256:" + h.hex();
    if (actual != digest) return fail("blob '{}' hashes to {}; its content does not match its name", path, actual);
    if (auto r = tmp->commit(dest, true); !r) return r;
    blobs_.insert(digest);
    return {};
  }

  const ImageStore& store_;
  std::string path_;
  workspace::TarLimits limits_;
  workspace::TarReader* reader_ = nullptr;
  std::string layout_, index_;
  bool layoutSeen_ = false, indexSeen_ = false;
  std::set<std::string> blobs_;
};

// One image named by the archive's index.json.
struct IndexEntry {
  Descriptor descriptor;
  std::string name;  ///< from the annotations ("" when none is a full reference)
};

Result<std::vector<IndexEntry>> readIndex(const std::string& text) {
  auto doc = parseManifest(text, kOciIndex);
  if (!doc || !doc->isIndex) return fail("its index.json is not an OCI image index{}", doc ? "" : ": " + doc.error().message);
  json j = json::parse(text, nullptr, false);
  std::vector<IndexEntry> out;
  const json& list = j["manifests"];
  for (size_t i = 0; i < doc->manifests.size(); ++i) {
    IndexEntry e{doc->manifests[i], ""};
    if (i < list.size() && list[i].is_object() && list[i].contains("annotations") && list[i]["annotations"].is_object()) {
      const json& an = list[i]["annotations"];
      for (std::string_view key : {kContainerdName, kRefName}) {
        auto it = an.find(std::string(key));
        if (it == an.end() || !it->is_string()) continue;
        std::string v = it->get<std::string>();
        if (v.find('/') == std::string::npos) continue;  // a bare tag ("v1") names no repository
        if (auto ref = parseImageRef(v)) {
          e.name = ref->name();
          break;
        }
      }
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) return fail("its index.json names no image");
  return out;
}

Result<std::string> readBlob(const ImageStore& store, const std::set<std::string>& loaded, const Descriptor& d) {
  if (!loaded.count(d.digest) && !pathExists(store.blobPath(d.digest)))
    return fail("it names blob {}, which it does not hold", d.digest);
  auto body = readFile(store.blobPath(d.digest), 4 << 20);
  if (!body) return std::unexpected(body.error());
  if (d.size && body->size() != d.size) return fail("blob {} has {} bytes, not the {} its descriptor says", d.digest, body->size(), d.size);
  return body;
}

// Builds the image of one index entry from the blobs now in the store.
Result<StoredRef> loadOne(const ImageStore& store, const std::set<std::string>& loaded, const IndexEntry& entry,
                          const std::string& name, const LoadOptions& options) {
  auto body = readBlob(store, loaded, entry.descriptor);
  if (!body) return std::unexpected(body.error());
  auto doc = parseManifest(*body, entry.descriptor.mediaType);
  if (!doc) return fail("manifest {}: {}", entry.descriptor.digest, doc.error().message);
  std::vector<std::string> blobs = {entry.descriptor.digest};
  std::string manifestDigest = entry.descriptor.digest;
  if (doc->isIndex) {
    auto pick = selectPlatform(*doc, options.build.platform);
    if (!pick) return fail("{}", pick.error().message);
    auto child = readBlob(store, loaded, *pick);
    if (!child) return std::unexpected(child.error());
    doc = parseManifest(*child, pick->mediaType);
    if (!doc) return fail("manifest {}: {}", pick->digest, doc.error().message);
    if (doc->isIndex) return fail("the index for {} points to another index", options.build.platform.str());
    manifestDigest = pick->digest;
    blobs.push_back(manifestDigest);
  }
  ImageRecord record;
  record.manifestDigest = manifestDigest;
  record.configDigest = doc->config.digest;
  record.platform = options.build.platform.str();
  std::vector<Descriptor> needed = {doc->config};
  needed.insert(needed.end(), doc->layers.begin(), doc->layers.end());
  for (const auto& l : doc->layers) {
    if (auto c = layerCompression(l.mediaType); !c) return fail("{}", c.error().message);
    record.layerBytes += l.size;
  }
  for (const auto& d : needed) {
    if (!loaded.count(d.digest) && !pathExists(store.blobPath(d.digest)))
      return fail("it names blob {}, which it does not hold", d.digest);
    blobs.push_back(d.digest);
  }
  record.blobs = blobs;
  if (!pathExists(store.erofsPath(manifestDigest)))
    if (auto r = buildStoredImage(store, record, *doc, name, options.build); !r) return std::unexpected(r.error());
  StoredRef ref{name, manifestDigest, static_cast<int64_t>(std::time(nullptr))};
  if (auto r = store.writeRef(ref); !r) return std::unexpected(r.error());
  return ref;
}

}  // namespace

Result<SaveReport> saveImage(const ImageStore& store, const ImageRef& ref, const std::string& path) {
  // "-" streams to stdout (like docker save); a file goes through a temporary name.
  std::optional<TempFile> tmp;
  if (path != "-") {
    auto created = TempFile::create(path);
    if (!created) return std::unexpected(created.error());
    tmp.emplace(std::move(*created));
  }
  const int fd = tmp ? tmp->fd() : STDOUT_FILENO;
  auto found = store.findRef(ref);
  if (!found) return failWith(exit_code::kImage, "{} is not in the image store (airlock image ls)", ref.str());
  const std::string& digest = found->manifestDigest;
  auto body = readFile(store.blobPath(digest), 4 << 20);
  if (!body) return failWith(exit_code::kImage, "the store lacks the manifest of {}; pull it again", ref.str());
  auto doc = parseManifest(*body, "");
  if (!doc || doc->isIndex) return failWith(exit_code::kImage, "the stored manifest of {} cannot be read", ref.str());
  std::vector<std::string> blobs = {digest, doc->config.digest};
  for (const auto& l : doc->layers)
    if (std::find(blobs.begin(), blobs.end(), l.digest) == blobs.end()) blobs.push_back(l.digest);
  json index = {{"schemaVersion", 2},
                {"mediaType", kOciIndex},
                {"manifests",
                 {{{"mediaType", doc->mediaType.empty() ? std::string(kOciManifest) : doc->mediaType},
                   {"digest", digest},
                   {"size", body->size()},
                   {"annotations", {{std::string(kRefName), found->name}}}}}}};
  SaveReport report;
  report.manifestDigest = digest;
  {
    TarWriter w(fd);
    for (auto r : {w.file("oci-layout", R"({"imageLayoutVersion":"1.0.0"})"), w.file("index.json", index.dump()),
                   w.dir("blobs/"), w.dir("blobs/sha256/")})
      if (!r) return std::unexpected(r.error());
    for (const auto& b : blobs) {
      auto n = w.blob(b, store.blobPath(b));
      if (!n) return std::unexpected(n.error());
      ++report.blobs;
      report.bytes += *n;
    }
    if (auto r = w.close(); !r) return std::unexpected(r.error());
  }
  if (!tmp) return report;
  struct stat st {};
  if (::fstat(tmp->fd(), &st) == 0) report.bytes = static_cast<uint64_t>(st.st_size);
  if (auto r = tmp->commit(path, false); !r) return std::unexpected(r.error());
  return report;
}

Result<std::vector<StoredRef>> loadImageArchive(const ImageStore& store, const std::string& path,
                                                const LoadOptions& options) {
  if (auto r = store.ensureLayout(); !r) return std::unexpected(r.error());
  LayoutReader reader(store, path, options.limits);
  auto read = reader.run();
  auto dropLoaded = [&] {
    auto lock = store.lock(options.build.progress);
    store.dropUnusedBlobs(std::vector<std::string>(reader.blobs().begin(), reader.blobs().end()));
  };
  auto refuse = [&](const std::string& why) -> Result<std::vector<StoredRef>> {
    dropLoaded();
    return failWith(exit_code::kImage, "the image archive {} was refused: {}", path, why);
  };
  if (!read) {
    dropLoaded();
    return std::unexpected(read.error());
  }
  auto entries = readIndex(reader.index());
  if (!entries) return refuse(entries.error().message);
  if (!options.name.empty() && entries->size() != 1)
    return refuse(fmt::format("--name needs an archive of one image; it holds {}", entries->size()));
  std::vector<StoredRef> out;
  for (const auto& e : *entries) {
    std::string name = e.name;
    if (!options.name.empty()) {
      auto ref = parseImageRef(options.name);
      if (!ref) return std::unexpected(ref.error());
      name = ref->name();
    }
    if (name.empty()) {
      dropLoaded();
      return failWith(exit_code::kUsage, "{}: image {} has no name in index.json (annotation {}); give one with --name",
                      path, e.descriptor.digest, kRefName);
    }
    report(options.build.progress, fmt::format("loading {} ({})", name, e.descriptor.digest));
    auto ref = loadOne(store, reader.blobs(), e, name, options);
    if (!ref) return refuse(ref.error().message);
    out.push_back(std::move(*ref));
  }
  return out;
}

}  // namespace airlock::image::oci
