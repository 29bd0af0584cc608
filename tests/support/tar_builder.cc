#include "support/tar_builder.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <memory>

namespace airlock::test {
namespace {

la_ssize_t append(archive*, void* user, const void* buf, size_t n) {
  static_cast<std::string*>(user)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

struct WriterDeleter {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct EntryDeleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};
using Writer = std::unique_ptr<archive, WriterDeleter>;
using Entry = std::unique_ptr<archive_entry, EntryDeleter>;

/// A pax writer appending to `out`. `binaryNames`: names are raw bytes, not
/// UTF-8 (a pax "hdrcharset=BINARY" record in every entry's extended header).
Writer openWriter(std::string& out, const std::string& compression, bool binaryNames) {
  Writer a(archive_write_new());
  archive_write_set_format_pax_restricted(a.get());
  if (binaryNames) archive_write_set_format_option(a.get(), "pax", "hdrcharset", "BINARY");
  if (compression == "gzip") archive_write_add_filter_gzip(a.get());
  if (compression == "zstd") archive_write_add_filter_zstd(a.get());
  archive_write_set_bytes_in_last_block(a.get(), 1);
  EXPECT_EQ(archive_write_open(a.get(), &out, nullptr, append, nullptr), ARCHIVE_OK) << archive_error_string(a.get());
  return a;
}

}  // namespace

std::string makeTar(const std::vector<TarEntry>& entries, const std::string& compression) {
  std::string out;
  Writer a = openWriter(out, compression, true);
  for (const auto& t : entries) {
    Entry e(archive_entry_new());
    archive_entry_copy_pathname(e.get(), t.name.c_str());
    archive_entry_set_perm(e.get(), t.mode);
    archive_entry_set_mtime(e.get(), 1700000000, 0);
    switch (t.type) {
      case 'd': archive_entry_set_filetype(e.get(), AE_IFDIR); break;
      case 'l':
        archive_entry_set_filetype(e.get(), AE_IFLNK);
        archive_entry_copy_symlink(e.get(), t.link.c_str());
        break;
      case 'h':
        archive_entry_set_filetype(e.get(), AE_IFREG);
        archive_entry_copy_hardlink(e.get(), t.link.c_str());
        break;
      case 'c':
        archive_entry_set_filetype(e.get(), AE_IFCHR);
        archive_entry_set_rdev(e.get(), makedev(1, 3));
        break;
      case 'b':
        archive_entry_set_filetype(e.get(), AE_IFBLK);
        archive_entry_set_rdev(e.get(), makedev(8, 0));
        break;
      case 'p': archive_entry_set_filetype(e.get(), AE_IFIFO); break;
      default:
        archive_entry_set_filetype(e.get(), AE_IFREG);
        archive_entry_set_size(e.get(), static_cast<la_int64_t>(t.content.size()));
    }
    EXPECT_EQ(archive_write_header(a.get(), e.get()), ARCHIVE_OK) << archive_error_string(a.get());
    if (t.type == 'f' && !t.content.empty()) archive_write_data(a.get(), t.content.data(), t.content.size());
  }
  EXPECT_EQ(archive_write_close(a.get()), ARCHIVE_OK) << archive_error_string(a.get());
  return out;
}

std::string makeSparseLinkTar(uint64_t size, int links) {
  std::string out;
  Writer a = openWriter(out, "none", false);
  Entry e(archive_entry_new());
  archive_entry_copy_pathname(e.get(), "big");
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_perm(e.get(), 0644);
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(size));
  archive_entry_sparse_add_entry(e.get(), 0, 4096);
  archive_entry_sparse_add_entry(e.get(), static_cast<la_int64_t>(size), 0);
  EXPECT_EQ(archive_write_header(a.get(), e.get()), ARCHIVE_OK) << archive_error_string(a.get());
  std::string data(4096, 'x');
  archive_write_data(a.get(), data.data(), data.size());
  std::string zeros(1 << 20, '\0');
  for (uint64_t left = size - data.size(); left > 0;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    archive_write_data(a.get(), zeros.data(), n);  // the hole: skipped by the writer
    left -= n;
  }
  for (int i = 0; i < links; ++i) {
    Entry l(archive_entry_new());
    archive_entry_copy_pathname(l.get(), ("link" + std::to_string(i)).c_str());
    archive_entry_set_filetype(l.get(), AE_IFREG);
    archive_entry_set_perm(l.get(), 0644);
    archive_entry_copy_hardlink(l.get(), "big");
    EXPECT_EQ(archive_write_header(a.get(), l.get()), ARCHIVE_OK) << archive_error_string(a.get());
  }
  EXPECT_EQ(archive_write_close(a.get()), ARCHIVE_OK) << archive_error_string(a.get());
  return out;
}

}  // namespace airlock::test
