#include "tar_builder.h"

#include <archive.h>
#include <archive_entry.h>

#include <stdexcept>

namespace airlock::test {
namespace {

la_ssize_t append(archive*, void* user, const void* buf, size_t n) {
  static_cast<std::string*>(user)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

}  // namespace

std::string makeTar(const std::vector<TarEntry>& entries, const std::string& compression) {
  std::string out;
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (compression == "gzip") archive_write_add_filter_gzip(a);
  if (compression == "zstd") archive_write_add_filter_zstd(a);
  archive_write_set_bytes_in_last_block(a, 1);
  if (archive_write_open(a, &out, nullptr, append, nullptr) != ARCHIVE_OK)
    throw std::runtime_error(archive_error_string(a));
  for (const auto& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.name.c_str());
    archive_entry_set_perm(entry, e.mode);
    archive_entry_set_mtime(entry, 1700000000, 0);
    switch (e.type) {
      case 'd': archive_entry_set_filetype(entry, AE_IFDIR); break;
      case 'l':
        archive_entry_set_filetype(entry, AE_IFLNK);
        archive_entry_set_symlink(entry, e.data.c_str());
        break;
      case 'h':
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_hardlink(entry, e.data.c_str());
        break;
      case 'c':
        archive_entry_set_filetype(entry, AE_IFCHR);
        archive_entry_set_rdev(entry, 0x0103);
        break;
      default:
        archive_entry_set_filetype(entry, AE_IFREG);
        archive_entry_set_size(entry, static_cast<la_int64_t>(e.data.size()));
    }
    archive_write_header(a, entry);
    if (e.type == 'f' && !e.data.empty()) archive_write_data(a, e.data.data(), e.data.size());
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

}  // namespace airlock::test
