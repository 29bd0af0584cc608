#include "vm/boot_assets.h"

#include <archive.h>
#include <archive_entry.h>
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "vm/guest_kernel.h"

namespace airlock::vm {
namespace {

TempDir makeTemp() {
  auto dir = TempDir::create(::testing::TempDir(), "boot-assets-test-");
  EXPECT_TRUE(dir.has_value());
  return std::move(*dir);
}

void writeTestFile(const std::string& path, std::string_view data) {
  ASSERT_TRUE(writeFileAtomic(path, data).has_value()) << path;
}

/// A small ET_EXEC ELF64: header, `bodySize` bytes of patterned body, and two
/// section headers at the end, so truncating it is detectable.
std::string fakeElf(size_t bodySize) {
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_ehsize = sizeof eh;
  eh.e_shoff = sizeof eh + bodySize;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 2;
  std::string out(reinterpret_cast<const char*>(&eh), sizeof eh);
  for (size_t i = 0; i < bodySize; ++i) out.push_back(static_cast<char>((i * 7 + i / 251) & 0xff));
  out.append(2 * sizeof(Elf64_Shdr), '\0');
  return out;
}

std::string compressWith(const std::vector<std::string>& argv) {
  auto out = runChecked(argv);
  EXPECT_TRUE(out.has_value()) << (out ? "" : out.error().message);
  return out.value_or("");
}

// A modules.dep excerpt of Debian's 6.1 cloud kernel.
constexpr std::string_view kModulesDep =
    "kernel/fs/fuse/fuse.ko:\n"
    "kernel/fs/fuse/cuse.ko: kernel/fs/fuse/fuse.ko\n"
    "kernel/fs/fuse/virtiofs.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko "
    "kernel/fs/fuse/fuse.ko\n"
    "kernel/fs/overlayfs/overlay.ko:\n"
    "kernel/fs/erofs/erofs.ko: kernel/lib/libcrc32c.ko\n"
    "kernel/lib/libcrc32c.ko:\n"
    "kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/drivers/virtio/virtio_ring.ko:\n"
    "kernel/drivers/virtio/virtio_mmio.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/drivers/char/virtio_console.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko "
    "kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n"
    "kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko\n"
    "kernel/net/core/failover.ko:\n"
    "kernel/drivers/virtio/virtio_balloon.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n";

TEST(ModulesDep, ParsesPathsAndDependencies) {
  auto deps = parseModulesDep(kModulesDep);
  ASSERT_TRUE(deps.has_value()) << deps.error().message;
  EXPECT_EQ(deps->size(), 15u);
  EXPECT_TRUE(deps->at("kernel/fs/fuse/fuse.ko").empty());
  EXPECT_EQ(deps->at("kernel/fs/erofs/erofs.ko"), std::vector<std::string>{"kernel/lib/libcrc32c.ko"});
  EXPECT_EQ(deps->at("kernel/drivers/net/virtio_net.ko").size(), 4u);
}

TEST(ModulesDep, RejectsALineWithoutColon) {
  auto deps = parseModulesDep("kernel/a.ko:\nkernel/b.ko kernel/a.ko\n");
  ASSERT_FALSE(deps.has_value());
  EXPECT_NE(deps.error().message.find("line 2"), std::string::npos) << deps.error().message;
}

TEST(ModulesDep, ModuleNameStripsDirectorySuffixAndDashes) {
  EXPECT_EQ(moduleName("kernel/fs/fuse/virtiofs.ko"), "virtiofs");
  EXPECT_EQ(moduleName("kernel/sound/snd-hda-core.ko.xz"), "snd_hda_core");
  EXPECT_EQ(moduleName("kernel/fs/erofs/erofs.ko.zst"), "erofs");
  EXPECT_EQ(moduleName("virtio-blk"), "virtio_blk");
}

TEST(ModulesDep, ParsesBuiltinNames) {
  auto builtin = parseModulesBuiltin("kernel/fs/ext4/ext4.ko\nkernel/fs/binfmt_script.ko\n\n");
  EXPECT_EQ(builtin, (std::set<std::string>{"ext4", "binfmt_script"}));
}

TEST(ModuleLoadOrder, PutsDependenciesFirstWithoutDuplicates) {
  auto deps = parseModulesDep(kModulesDep);
  ASSERT_TRUE(deps.has_value());
  auto order = moduleLoadOrder(*deps, {"ext4"}, guestModules());
  ASSERT_TRUE(order.has_value()) << order.error().message;
  std::vector<std::string> names;
  for (const auto& path : *order) names.push_back(moduleName(path));
  EXPECT_EQ(names, (std::vector<std::string>{"virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "virtio_console",
                                             "failover", "net_failover", "virtio_net", "fuse", "virtiofs", "libcrc32c",
                                             "erofs", "overlay", "virtio_balloon"}));
  // Every module comes after everything it depends on.
  for (size_t i = 0; i < order->size(); ++i) {
    for (const auto& dep : deps->at((*order)[i])) {
      auto at = std::find(order->begin(), order->end(), dep);
      ASSERT_NE(at, order->end()) << dep;
      EXPECT_LT(static_cast<size_t>(at - order->begin()), i) << dep << " after " << (*order)[i];
    }
  }
}

TEST(ModuleLoadOrder, FailsForAnUnknownModule) {
  auto deps = parseModulesDep(kModulesDep);
  ASSERT_TRUE(deps.has_value());
  auto order = moduleLoadOrder(*deps, {}, {"virtio_blk", "ext4"});
  ASSERT_FALSE(order.has_value());
  EXPECT_EQ(order.error().message, "kernel module ext4 is neither in modules.dep nor built in");
}

TEST(ModuleLoadOrder, FailsForAMissingDependencyEntryAndACycle) {
  auto missing = parseModulesDep("kernel/a.ko: kernel/b.ko\n");
  ASSERT_TRUE(missing.has_value());
  auto order = moduleLoadOrder(*missing, {}, {"a"});
  ASSERT_FALSE(order.has_value());
  EXPECT_NE(order.error().message.find("kernel/b.ko"), std::string::npos) << order.error().message;

  auto cycle = parseModulesDep("kernel/a.ko: kernel/b.ko\nkernel/b.ko: kernel/a.ko\n");
  ASSERT_TRUE(cycle.has_value());
  order = moduleLoadOrder(*cycle, {}, {"a"});
  ASSERT_FALSE(order.has_value());
  EXPECT_NE(order.error().message.find("cycle"), std::string::npos) << order.error().message;
}

TEST(Payload, FindsEveryMagicSortedByOffset) {
  std::string image = "junk";
  image += std::string("\x28\xb5\x2f\xfd", 4);  // zstd at 4
  image += "..";
  image += std::string("\x1f\x8b\x08", 3);                    // gzip at 10
  image += std::string("\x02\x21\x4c\x18", 4);                // lz4 at 13
  image += std::string("\xfd\x37\x7a\x58\x5a\x00", 6) + "x";  // xz at 17
  auto found = findPayloadCandidates(image);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0].compression, Compression::kZstd);
  EXPECT_EQ(found[0].offset, 4u);
  EXPECT_EQ(found[1].compression, Compression::kGzip);
  EXPECT_EQ(found[1].offset, 10u);
  EXPECT_EQ(found[2].compression, Compression::kLz4Legacy);
  EXPECT_EQ(found[2].offset, 13u);
  EXPECT_EQ(found[3].compression, Compression::kXz);
  EXPECT_EQ(found[3].offset, 17u);
  EXPECT_TRUE(findPayloadCandidates("no magic here").empty());
}

TEST(Elf, AcceptsCompleteAndRejectsTruncatedOrForeignFiles) {
  std::string elf = fakeElf(1000);
  EXPECT_TRUE(isCompleteElf64(elf));
  EXPECT_FALSE(isCompleteElf64(elf.substr(0, elf.size() - 1)));
  EXPECT_FALSE(isCompleteElf64(elf.substr(0, 40)));
  EXPECT_FALSE(isCompleteElf64("#!/bin/sh\necho not an elf\n" + std::string(100, ' ')));
  std::string elf32 = elf;
  elf32[EI_CLASS] = ELFCLASS32;
  EXPECT_FALSE(isCompleteElf64(elf32));
}

/// A fake bzImage: junk holding a decoy gzip magic, then `stream`, then the
/// 4-byte size word the kernel build appends.
std::string fakeBzImage(const std::string& stream) {
  std::string image = "MZ fake setup code " + std::string(3000, '\x90');
  image += std::string("\x1f\x8b\x08", 3) + "not a gzip stream" + std::string(500, '\0');
  return image + stream + std::string("\x10\x27\x00\x00", 4);
}

class ExtractVmlinux : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(ExtractVmlinux, DecompressesThePayloadAfterJunkAndDecoys) {
  TempDir dir = makeTemp();
  std::string elf = fakeElf(200000);
  writeTestFile(dir.path() + "/elf", elf);
  std::vector<std::string> argv = GetParam();
  argv.push_back(dir.path() + "/elf");
  writeTestFile(dir.path() + "/bzImage", fakeBzImage(compressWith(argv)));

  auto r = extractVmlinux(dir.path() + "/bzImage", dir.path() + "/vmlinux");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto out = readFile(dir.path() + "/vmlinux");
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, elf);
  EXPECT_FALSE(pathExists(dir.path() + "/vmlinux.payload"));
}

INSTANTIATE_TEST_SUITE_P(Formats, ExtractVmlinux,
                         ::testing::Values(std::vector<std::string>{"lz4", "-l", "-c"},
                                           std::vector<std::string>{"gzip", "-c"},
                                           std::vector<std::string>{"xz", "-c", "--check=crc32"},
                                           std::vector<std::string>{"zstd", "-q", "-c"}),
                         [](const auto& p) { return p.param[0]; });

TEST(ExtractVmlinuxErrors, NamesTheImageWhenNoPayloadDecompresses) {
  TempDir dir = makeTemp();
  writeTestFile(dir.path() + "/bzImage", fakeBzImage("no stream at all"));
  auto r = extractVmlinux(dir.path() + "/bzImage", dir.path() + "/vmlinux");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find(dir.path() + "/bzImage"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("1 lz4/gzip/xz/zstd candidate"), std::string::npos) << r.error().message;
  EXPECT_FALSE(pathExists(dir.path() + "/vmlinux"));
}

/// One entry of a cpio read back with libarchive.
struct CpioEntry {
  mode_t type;
  mode_t perm;
  unsigned devMajor, devMinor;
  std::string data;
};

std::map<std::string, CpioEntry> readCpio(const std::string& path, int* format) {
  std::map<std::string, CpioEntry> entries;
  archive* a = archive_read_new();
  archive_read_support_format_cpio(a);
  EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 65536), ARCHIVE_OK);
  archive_entry* e;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    CpioEntry entry{archive_entry_filetype(e),
                    archive_entry_perm(e),
                    static_cast<unsigned>(archive_entry_rdevmajor(e)),
                    static_cast<unsigned>(archive_entry_rdevminor(e)),
                    {}};
    EXPECT_EQ(archive_entry_uid(e), 0);
    EXPECT_EQ(archive_entry_gid(e), 0);
    char buf[65536];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) entry.data.append(buf, static_cast<size_t>(n));
    entries[archive_entry_pathname(e)] = entry;
  }
  *format = archive_format(a);
  archive_read_free(a);
  return entries;
}

TEST(Initramfs, HoldsInitDevicesDirectoriesAndModulesInLoadOrder) {
  TempDir dir = makeTemp();
  std::string init = fakeElf(5000);
  writeTestFile(dir.path() + "/airlock-init", init);
  writeTestFile(dir.path() + "/virtio_ring.ko", "ring module");
  writeTestFile(dir.path() + "/virtio.ko", "virtio module");
  std::vector<std::string> modules = {dir.path() + "/virtio_ring.ko", dir.path() + "/virtio.ko"};
  std::string cpio = dir.path() + "/initramfs.cpio";
  auto r = writeInitramfs(cpio, dir.path() + "/airlock-init", modules);
  ASSERT_TRUE(r.has_value()) << r.error().message;

  int format = 0;
  auto entries = readCpio(cpio, &format);
  EXPECT_EQ(format, ARCHIVE_FORMAT_CPIO_SVR4_NOCRC);  // newc
  ASSERT_TRUE(entries.contains("init"));
  EXPECT_EQ(entries["init"].type, AE_IFREG);
  EXPECT_EQ(entries["init"].perm, 0755u);
  EXPECT_EQ(entries["init"].data, init);
  for (const char* d : {"dev", "proc", "sys", "tmp", "run", "mnt", "newroot", "lib/modules"}) {
    ASSERT_TRUE(entries.contains(d)) << d;
    EXPECT_EQ(entries[d].type, AE_IFDIR) << d;
  }
  EXPECT_EQ(entries["tmp"].perm, 01777u);
  EXPECT_EQ(entries["dev/console"].type, AE_IFCHR);
  EXPECT_EQ(entries["dev/console"].devMajor, 5u);
  EXPECT_EQ(entries["dev/console"].devMinor, 1u);
  EXPECT_EQ(entries["dev/null"].type, AE_IFCHR);
  EXPECT_EQ(entries["dev/null"].devMajor, 1u);
  EXPECT_EQ(entries["dev/null"].devMinor, 3u);
  EXPECT_EQ(entries["lib/modules/virtio_ring.ko"].data, "ring module");
  EXPECT_EQ(entries["lib/modules/virtio.ko"].data, "virtio module");
  EXPECT_EQ(entries["lib/modules/load-order"].data, "virtio_ring.ko\nvirtio.ko\n");

  // The same inputs give the same bytes.
  std::string again = dir.path() + "/again.cpio";
  ASSERT_TRUE(writeInitramfs(again, dir.path() + "/airlock-init", modules).has_value());
  EXPECT_EQ(readFile(cpio).value_or("a"), readFile(again).value_or("b"));
}

TEST(Initramfs, FailsClearlyWithoutInitBinary) {
  TempDir dir = makeTemp();
  auto r = writeInitramfs(dir.path() + "/initramfs.cpio", dir.path() + "/missing-init", {});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("airlock-init"), std::string::npos) << r.error().message;
}

/// Collects progress lines with the seconds since the previous line, and
/// prints them, so a run shows how long each phase took.
struct ProgressLog {
  std::vector<std::string> lines;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();

  ProgressFn fn() {
    return [this](const std::string& line) {
      tick();
      lines.push_back(line);
      std::printf("  progress: %s\n", line.c_str());
    };
  }
  void tick(const char* what = "previous phase") {
    auto now = std::chrono::steady_clock::now();
    std::printf("  %s took %.2f s\n", what, std::chrono::duration<double>(now - last).count());
    last = now;
  }
  bool mentions(std::string_view word) const {
    return std::any_of(lines.begin(), lines.end(), [&](const auto& l) { return l.find(word) != std::string::npos; });
  }
};

// With airlock's own kernel in the cache, it is booted: no apt, no modules in
// the initramfs.
TEST(EnsureBootAssets, PrefersTheBuiltGuestKernelAndLoadsNoModules) {
  TempDir cache = makeTemp();
  std::string init = cache.path() + "/init";
  writeTestFile(init, "#!/bin/sh\n");
  const std::string dir = bootAssetsDir(cache.path()) + "/" + guestKernelDirName(guestKernelConfig());
  ASSERT_TRUE(makeDirs(dir + "/modules").has_value());
  writeTestFile(dir + "/vmlinux", fakeElf(4096));
  writeTestFile(dir + "/release", "6.1.158-airlock\n");
  writeTestFile(dir + "/modules/load-order", "");

  std::vector<std::string> progress;
  auto assets = ensureBootAssets(cache.path(), init, [&](const std::string& l) { progress.push_back(l); });
  ASSERT_TRUE(assets.has_value()) << assets.error().message;
  EXPECT_EQ(assets->kernel, dir + "/vmlinux");
  EXPECT_EQ(assets->kernelRelease, "6.1.158-airlock");
  for (const auto& line : progress) EXPECT_EQ(line.find("apt"), std::string::npos) << line;
  int format = 0;
  auto entries = readCpio(assets->initramfs, &format);
  EXPECT_EQ(entries["init"].data, "#!/bin/sh\n");
  EXPECT_EQ(entries["lib/modules/load-order"].data, "");
  for (const auto& [name, entry] : entries) EXPECT_FALSE(name.ends_with(".ko")) << name;
  EXPECT_FALSE(pathExists(cache.path() + "/downloads"));

  // A second boot finds both at once.
  progress.clear();
  auto again = ensureBootAssets(cache.path(), init, [&](const std::string& l) { progress.push_back(l); });
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->initramfs, assets->initramfs);
  EXPECT_TRUE(progress.empty());
}

// The real thing: resolves and downloads Debian's cloud kernel package with apt
// (~27 MB), extracts it and builds the initramfs, in a private cache directory;
// then checks that only missing pieces are rebuilt.
TEST(EnsureBootAssets, BuildsFromTheDebianCloudKernelAndRebuildsOnlyWhatIsMissing) {
  TempDir cache = makeTemp();
  // Any static executable stands in for airlock-init here.
  std::string init = cache.path() + "/init";
  ASSERT_TRUE(runChecked({"cp", "/bin/busybox", init}).has_value());

  ProgressLog log;
  auto assets = ensureBootAssets(cache.path(), init, log.fn());
  log.tick("initramfs build");
  ASSERT_TRUE(assets.has_value()) << assets.error().message;
  EXPECT_TRUE(log.mentions("downloading"));
  EXPECT_TRUE(assets->kernel.starts_with(cache.path() + "/assets/kernel-")) << assets->kernel;
  EXPECT_TRUE(assets->initramfs.starts_with(cache.path() + "/assets/initramfs-")) << assets->initramfs;
  EXPECT_TRUE(assets->kernelRelease.ends_with("-cloud-amd64")) << assets->kernelRelease;
  auto vmlinux = readFile(assets->kernel, 512 << 20);
  ASSERT_TRUE(vmlinux.has_value());
  EXPECT_TRUE(isCompleteElf64(*vmlinux));
  EXPECT_GT(vmlinux->size(), 20u << 20);

  int format = 0;
  auto entries = readCpio(assets->initramfs, &format);
  EXPECT_EQ(entries["init"].data, readFile(init, 64 << 20).value_or(""));
  std::string loadOrder = entries["lib/modules/load-order"].data;
  for (const char* module : {"virtio_mmio.ko", "virtio_blk.ko", "virtio_console.ko", "virtio_net.ko", "virtiofs.ko",
                             "fuse.ko", "erofs.ko", "overlay.ko"}) {
    EXPECT_NE(loadOrder.find(std::string(module) + "\n"), std::string::npos) << module << " in\n" << loadOrder;
    EXPECT_TRUE(isCompleteElf64(entries["lib/modules/" + std::string(module)].data)) << module;
  }
  EXPECT_LT(loadOrder.find("virtio.ko\n"), loadOrder.find("virtio_mmio.ko\n"));
  EXPECT_LT(loadOrder.find("fuse.ko\n"), loadOrder.find("virtiofs.ko\n"));

  // Everything present: no work, no progress, same paths.
  log.lines.clear();
  auto start = std::chrono::steady_clock::now();
  auto again = ensureBootAssets(cache.path(), init, log.fn());
  std::printf("  cached lookup took %.3f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_TRUE(log.lines.empty());
  EXPECT_EQ(again->kernel, assets->kernel);
  EXPECT_EQ(again->initramfs, assets->initramfs);

  // A new airlock-init: a new initramfs on the same kernel, nothing downloaded or extracted.
  {
    Fd fd(::open(init.c_str(), O_WRONLY | O_APPEND));
    ASSERT_TRUE(fd && writeAll(fd.get(), "x"));
  }
  log.last = std::chrono::steady_clock::now();
  auto newInit = ensureBootAssets(cache.path(), init, log.fn());
  log.tick("initramfs rebuild");
  ASSERT_TRUE(newInit.has_value()) << newInit.error().message;
  EXPECT_EQ(newInit->kernel, assets->kernel);
  EXPECT_NE(newInit->initramfs, assets->initramfs);
  EXPECT_FALSE(log.mentions("downloading"));
  EXPECT_FALSE(log.mentions("extracting"));

  // A lost kernel directory is rebuilt from the cached package, without a download.
  ASSERT_TRUE(removeTree(assets->kernel.substr(0, assets->kernel.rfind('/'))).has_value());
  log.lines.clear();
  auto rebuilt = ensureBootAssets(cache.path(), init, log.fn());
  log.tick("kernel rebuild from the cached package");
  ASSERT_TRUE(rebuilt.has_value()) << rebuilt.error().message;
  EXPECT_EQ(rebuilt->kernel, assets->kernel);
  EXPECT_TRUE(log.mentions("extracting"));
  EXPECT_FALSE(log.mentions("downloading"));
  EXPECT_EQ(readFile(rebuilt->kernel, 512 << 20).value_or(""), *vmlinux);
}

}  // namespace
}  // namespace airlock::vm
