#include "test_util.h"

#include "workspace/git_config_paths.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

namespace airlock::workspace::test {

TempDir scratch() {
  const char* t = std::getenv("TMPDIR");
  auto d = TempDir::create(t && *t ? t : "/tmp", "airlock-ws-test-");
  if (!d) std::abort();
  return std::move(*d);
}

void writeFile(const std::string& path, const std::string& content, unsigned mode) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  ::chmod(path.c_str(), mode);
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string makeTar(const std::vector<TarEntry>& entries) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY");
  std::string out;
  out.resize(64 << 20);
  size_t used = 0;
  archive_write_set_bytes_in_last_block(a, 1);
  archive_write_open_memory(a, out.data(), out.size(), &used);
  for (const auto& t : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_copy_pathname(e, t.name.c_str());
    archive_entry_set_perm(e, t.mode);
    switch (t.type) {
      case 'd': archive_entry_set_filetype(e, AE_IFDIR); break;
      case 'l': archive_entry_set_filetype(e, AE_IFLNK), archive_entry_copy_symlink(e, t.link.c_str()); break;
      case 'h': archive_entry_set_filetype(e, AE_IFREG), archive_entry_copy_hardlink(e, t.link.c_str()); break;
      case 'c': archive_entry_set_filetype(e, AE_IFCHR), archive_entry_set_rdev(e, makedev(1, 3)); break;
      case 'b': archive_entry_set_filetype(e, AE_IFBLK), archive_entry_set_rdev(e, makedev(8, 0)); break;
      case 'p': archive_entry_set_filetype(e, AE_IFIFO); break;
      default: archive_entry_set_filetype(e, AE_IFREG), archive_entry_set_size(e, t.content.size()); break;
    }
    EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (t.type == 'f' && !t.content.empty()) archive_write_data(a, t.content.data(), t.content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

std::string makeSparseLinkTar(uint64_t size, int links) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  std::string out(1 << 20, '\0');
  size_t used = 0;
  archive_write_set_bytes_in_last_block(a, 1);
  archive_write_open_memory(a, out.data(), out.size(), &used);
  archive_entry* e = archive_entry_new();
  archive_entry_copy_pathname(e, "big");
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, static_cast<la_int64_t>(size));
  archive_entry_sparse_add_entry(e, 0, 4096);
  archive_entry_sparse_add_entry(e, static_cast<la_int64_t>(size), 0);
  EXPECT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
  std::string data(4096, 'x');
  archive_write_data(a, data.data(), data.size());
  std::string zeros(1 << 20, '\0');
  for (uint64_t left = size - data.size(); left > 0;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    archive_write_data(a, zeros.data(), n);  // the hole: skipped by the writer
    left -= n;
  }
  archive_entry_free(e);
  for (int i = 0; i < links; ++i) {
    archive_entry* l = archive_entry_new();
    archive_entry_copy_pathname(l, ("link" + std::to_string(i)).c_str());
    archive_entry_set_filetype(l, AE_IFREG);
    archive_entry_set_perm(l, 0644);
    archive_entry_copy_hardlink(l, "big");
    EXPECT_EQ(archive_write_header(a, l), ARCHIVE_OK) << archive_error_string(a);
    archive_entry_free(l);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

uint64_t diskBytes(const std::string& path) {
  uint64_t total = 0;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  total += static_cast<uint64_t>(st.st_blocks) * 512;
  if (S_ISDIR(st.st_mode))
    for (const auto& e : std::filesystem::directory_iterator(path)) total += diskBytes(e.path().string());
  return total;
}

std::string treeListing(const std::string& root) {
  std::map<std::string, std::string> rows;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec); it != std::filesystem::end(it); ++it) {
    struct stat st {};
    std::string p = it->path().string();
    ::lstat(p.c_str(), &st);
    std::string rel = p.substr(root.size() + 1);
    std::string what;
    if (S_ISLNK(st.st_mode)) what = "l " + std::filesystem::read_symlink(p).string();
    else if (S_ISDIR(st.st_mode)) what = "d";
    else if (S_ISREG(st.st_mode)) what = "f " + readAll(p);
    else what = "special";
    rows[rel] = fmt::format("{} {:o}", what, st.st_mode & 07777);
  }
  std::string out;
  for (auto& [k, v] : rows) out += k + " " + v + "\n";
  return out;
}

Scenario::Scenario() : dir(scratch()) {
  ws = dir.path() + "/ws";
  session = dir.path() + "/session";
  state = dir.path() + "/state";
  std::filesystem::create_directories(ws);
  std::filesystem::create_directories(session);
}

void Scenario::snapshot() {
  wsFd.reset(::open(ws.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  auto r = takeSnapshot(ws, session + "/snapshot", rules);
  ASSERT_TRUE(r) << r.error().message;
  baseline = r->manifest;
  snapFd.reset(::open((session + "/snapshot").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

std::string Scenario::loadTar(const std::string& tar) {
  std::filesystem::remove_all(session + "/staged");
  auto cs = ChangeSet::fromTarBuffer(tar, session + "/staged");
  if (!cs) return cs.error().message;
  changes = std::move(*cs);
  return "";
}

void Scenario::loadDirs(const std::string& after) {
  std::filesystem::remove_all(session + "/staged");
  auto cs = ChangeSet::fromDirectories(session + "/snapshot", after, session + "/staged", rules);
  ASSERT_TRUE(cs) << cs.error().message;
  changes = std::move(*cs);
}

std::unique_ptr<ThreeWayDiff> Scenario::engine() {
  return std::make_unique<ThreeWayDiff>(baseline, *changes, rules, wsFd.get(), snapFd.get(), 1 << 20, umask);
}

DiffResult Scenario::diff() {
  auto r = engine()->run();
  EXPECT_TRUE(r) << r.error().message;
  if (!r) return {};
  classifyItems(r->items, baseline, HostView{wsFd.get(), &rules, gitConfigNamedPaths(ws)});
  return std::move(*r);
}

Result<FlushReport> Scenario::flushAll(const DiffResult& d, const FlushHooks& hooks) {
  std::vector<const DiffItem*> all;
  for (const auto& it : d.items) all.push_back(&it);
  FlushContext ctx{ws, session, state, hooks};
  return flush(all, ctx);
}

}  // namespace airlock::workspace::test
