#include "guest/layer_export.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

namespace airlock::guest {
namespace {

constexpr size_t kBlock = 512;

/// Writes `value` as a NUL-terminated octal field of `width` bytes; false if it does not fit.
bool octal(char* field, size_t width, unsigned long long value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + (value & 7)));
    value >>= 3;
  } while (value);
  if (digits.size() > width - 1) return false;
  std::memset(field, '0', width - 1 - digits.size());
  std::memcpy(field + width - 1 - digits.size(), digits.data(), digits.size());
  field[width - 1] = '\0';
  return true;
}

struct Header {
  std::string path;
  char type = '0';
  unsigned mode = 0644;
  unsigned long long size = 0;
  long long mtime = 0;
  std::string link;
  unsigned devMajor = 0, devMinor = 0;  ///< device nodes
};

class TarWriter {
 public:
  explicit TarWriter(const TarSink& sink) : sink_(sink) {}

  bool header(const Header& h) {
    std::string pax;
    if (h.path.size() > 99) pax += record("path", h.path);
    if (h.link.size() > 99) pax += record("linkpath", h.link);
    if (h.size > 077777777777ull) pax += record("size", std::to_string(h.size));
    if (!pax.empty()) {
      if (!raw(block("././@PaxHeader", 'x', 0644, pax.size(), 0, "")) || !raw(pax) || !pad(pax.size())) return false;
    }
    std::string b = block(h.path.substr(0, 99), h.type, h.mode, h.size > 077777777777ull ? 0 : h.size, h.mtime,
                          h.link.substr(0, 99), h.devMajor, h.devMinor);
    return raw(b);
  }
  bool raw(std::string_view data) { return sink_(data); }
  bool pad(unsigned long long size) {
    size_t rem = size % kBlock;
    return rem == 0 || raw(std::string(kBlock - rem, '\0'));
  }
  bool finish() { return raw(std::string(2 * kBlock, '\0')); }

 private:
  static std::string record(const std::string& key, const std::string& value) {
    // "<len> key=value\n" where len counts itself.
    std::string body = " " + key + "=" + value + "\n";
    size_t len = body.size() + 1;
    while (std::to_string(len).size() + body.size() != len) ++len;
    return std::to_string(len) + body;
  }
  static std::string block(const std::string& name, char type, unsigned mode, unsigned long long size, long long mtime,
                           const std::string& link, unsigned devMajor = 0, unsigned devMinor = 0) {
    std::string b(kBlock, '\0');
    std::memcpy(&b[0], name.data(), name.size());
    octal(&b[100], 8, mode & 07777);
    octal(&b[108], 8, 0);
    octal(&b[116], 8, 0);
    octal(&b[124], 12, size);
    octal(&b[136], 12, static_cast<unsigned long long>(std::max<long long>(mtime, 0)));
    b[156] = type;
    std::memcpy(&b[157], link.data(), link.size());
    std::memcpy(&b[257], "ustar\0" "00", 8);
    if (type == '3' || type == '4') {
      octal(&b[329], 8, devMajor);
      octal(&b[337], 8, devMinor);
    }
    std::memset(&b[148], ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : b) sum += c;
    octal(&b[148], 7, sum);
    b[155] = ' ';
    return b;
  }
  const TarSink& sink_;
};

class Exporter {
 public:
  Exporter(const TarSink& sink, std::string& error, std::string& skipped)
      : tar_(sink), error_(error), skipped_(skipped) {}

  bool walk(int dirFd, const std::string& prefix) {
    DIR* d = fdopendir(dirFd);
    if (!d) return fail("cannot read directory " + display(prefix));
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    bool ok = true;
    for (const auto& name : names) {
      if (!(ok = entry(dirfd(d), prefix, name))) break;
    }
    closedir(d);
    return ok;
  }

  bool done() { return tar_.finish(); }

 private:
  static std::string display(const std::string& p) { return p.empty() ? "." : p; }

  bool fail(const std::string& what) {
    error_ = what + ": " + std::strerror(errno);
    return false;
  }

  bool entry(int parent, const std::string& prefix, const std::string& name) {
    std::string path = prefix + name;
    struct stat st {};
    if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return fail("cannot stat " + path);
    Header h;
    h.path = path;
    h.mode = st.st_mode & 07777;
    h.mtime = st.st_mtim.tv_sec;
    if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 0 && minor(st.st_rdev) == 0) {
      h.path = prefix + ".wh." + name;
      h.mode = 0;
      return tar_.header(h);
    }
    if (S_ISDIR(st.st_mode)) {
      h.type = '5';
      h.path += "/";
      if (!tar_.header(h)) return false;
      int fd = openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return fail("cannot open " + path);
      char value[4] = {};
      ssize_t n = fgetxattr(fd, "trusted.overlay.opaque", value, sizeof value);
      if (n == 1 && value[0] == 'y') {
        Header opq;
        opq.path = path + "/.wh..wh..opq";
        opq.mode = 0;
        if (!tar_.header(opq)) {
          close(fd);
          return false;
        }
      }
      return walk(fd, path + "/");
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = readlinkat(parent, name.c_str(), target.data(), target.size());
      if (n < 0) return fail("cannot read symlink " + path);
      target.resize(static_cast<size_t>(n));
      h.type = '2';
      h.mode = 0777;
      h.link = target;
      return tar_.header(h);
    }
    if (S_ISREG(st.st_mode)) {
      if (st.st_nlink > 1) {
        auto key = std::make_pair(st.st_dev, st.st_ino);
        auto seen = links_.find(key);
        if (seen != links_.end()) {
          h.type = '1';
          h.link = seen->second;
          return tar_.header(h);
        }
        links_[key] = path;
      }
      int fd = openat(parent, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return fail("cannot open " + path);
      h.size = static_cast<unsigned long long>(st.st_size);
      bool ok = tar_.header(h) && copy(fd, h.size, path);
      close(fd);
      return ok && tar_.pad(h.size);
    }
    // FIFOs, sockets and device nodes go into the stream so the host's review
    // lists them as skipped (it never flushes them); tar has no socket type,
    // so a socket is sent as a FIFO.
    h.mode &= 0777;
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
      h.type = '6';
    } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      h.type = S_ISCHR(st.st_mode) ? '3' : '4';
      h.devMajor = major(st.st_rdev);
      h.devMinor = minor(st.st_rdev);
    } else {
      skipped_ += path + " (unknown file type)\n";
      return true;
    }
    if (S_ISSOCK(st.st_mode)) skipped_ += path + " (socket, sent as a FIFO)\n";
    return tar_.header(h);
  }

  bool copy(int fd, unsigned long long size, const std::string& path) {
    static char buf[65536];
    unsigned long long left = size;
    while (left > 0) {
      ssize_t n = read(fd, buf, std::min<unsigned long long>(sizeof buf, left));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0) errno = EIO;
        return fail("cannot read " + path + " (it changed during the export)");
      }
      if (!tar_.raw(std::string_view(buf, static_cast<size_t>(n)))) return fail("cannot send the change set");
      left -= static_cast<unsigned long long>(n);
    }
    return true;
  }

  TarWriter tar_;
  std::string& error_;
  std::string& skipped_;
  std::map<std::pair<dev_t, ino_t>, std::string> links_;
};

}  // namespace

bool exportUpperLayer(const std::string& upperDir, const TarSink& sink, std::string& error, std::string& skipped) {
  int fd = open(upperDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open " + upperDir + ": " + std::strerror(errno);
    return false;
  }
  Exporter exporter(sink, error, skipped);
  if (exporter.walk(fd, "") && exporter.done()) return true;
  if (error.empty()) error = "the change-set stream was closed by the receiver";
  return false;
}

}  // namespace airlock::guest
