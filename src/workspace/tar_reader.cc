#include "workspace/tar_reader.h"

#include <archive_entry.h>

#include "workspace/relpath.h"

namespace airlock::workspace {

std::string TarReader::errorText() const {
  const char* s = archive_error_string(a_);
  return s ? s : "unknown error";
}

Result<std::optional<TarEntry>> TarReader::next() {
  archive_entry* header = nullptr;
  int r = archive_read_next_header(a_, &header);
  if (r == ARCHIVE_EOF) return std::optional<TarEntry>{};
  if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
    return fail("{} is not a valid tar stream after {} entries: {}", stream_, count_, errorText());
  ++count_;
  TarEntry e;
  e.header = header;
  const char* rawName = archive_entry_pathname(header);
  if (!rawName) return fail("entry {} of {} has a name that cannot be decoded", count_, stream_);
  e.kind = tarEntryKind(header);
  bool special = e.kind == TarEntryKind::Fifo || e.kind == TarEntryKind::Socket ||
                 e.kind == TarEntryKind::CharDevice || e.kind == TarEntryKind::BlockDevice;
  if (special && special_ == SpecialFiles::Skip) {
    e.skipped = true;
    return std::optional<TarEntry>(std::move(e));
  }
  bool report = special && special_ == SpecialFiles::Report;
  auto admitted = guard_.admit(rawName, report ? TarEntryKind::File : e.kind);
  if (!admitted) return std::unexpected(admitted.error());
  e.path = std::move(*admitted);
  if (report) {
    e.skipped = true;
    if (!e.path.empty()) guard_.note(e.path, EntryType::File);  // nothing may lie below it
    return std::optional<TarEntry>(std::move(e));
  }
  if (e.path.empty()) return std::optional<TarEntry>(std::move(e));
  e.whiteout = baseName(e.path).starts_with(kWhiteout);
  if (!e.whiteout && e.kind == TarEntryKind::HardLink) {
    auto target = guard_.hardLinkTarget(archive_entry_hardlink(header), e.path);
    if (!target) return std::unexpected(target.error());
    e.linkTarget = std::move(*target);
  }
  return std::optional<TarEntry>(std::move(e));
}

Result<uint64_t> TarReader::readContent(const std::string& path,
                                        const std::function<Result<>(std::string_view)>& sink) {
  static thread_local char buf[1 << 17];
  uint64_t size = 0;
  for (;;) {
    la_ssize_t n = archive_read_data(a_, buf, sizeof buf);
    if (n < 0) return fail("cannot read the content of entry '{}': {}", displayPath(path), errorText());
    if (n == 0) break;
    size += static_cast<uint64_t>(n);
    if (auto r = guard_.account(path, size, static_cast<uint64_t>(n)); !r) return std::unexpected(r.error());
    if (auto r = sink(std::string_view(buf, static_cast<size_t>(n))); !r) return std::unexpected(r.error());
  }
  return size;
}

}  // namespace airlock::workspace
