// TerminalTextFilter: what `airlock logs` prints of a pty's output.

#include "common/terminal_text.h"

#include <gtest/gtest.h>

namespace airlock {
namespace {

std::string filtered(std::string_view bytes) {
  TerminalTextFilter f;
  std::string out = f.feed(bytes);
  return out + f.finish();
}

TEST(TerminalText, ColorsCursorMovesAndTitlesAreDropped) {
  EXPECT_EQ(filtered("\x1b[1;31mred\x1b[0m text\r\n"), "red text\n");
  EXPECT_EQ(filtered("\x1b[2J\x1b[H\x1b[?25lhome\n"), "home\n");
  EXPECT_EQ(filtered("\x1b]0;window title\x07" "after\n"), "after\n");
  EXPECT_EQ(filtered("\x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\\n"), "link\n");
  EXPECT_EQ(filtered("\x1b(Bplain\x1b" "7saved\x1b" "8\n"), "plainsaved\n");
}

// The guest is hostile: a sequence split between two reads is still
// dropped, and what is left cannot reach the reader's terminal raw.
TEST(TerminalText, ASequenceSplitBetweenPiecesIsStillDropped) {
  TerminalTextFilter f;
  std::string out = f.feed("a\x1b[3");
  out += f.feed("1mb\x1b]0;ti");
  out += f.feed("tle\x07" "c\n");
  EXPECT_EQ(out, "abc\n");
}

// A hostile guest opens a title (OSC) it never ends: what it prints after
// the next newline is still shown, and a single line is cut off after 4 KiB.
TEST(TerminalText, AnUnterminatedSequenceCannotHideTheRest) {
  EXPECT_EQ(filtered("\x1b]0;never ended\nvisible\n"), "\nvisible\n");
  std::string cut = filtered("\x1b]0;" + std::string(5000, 't') + "shown\n");
  EXPECT_TRUE(cut.ends_with("tshown\n")) << cut.substr(0, 40);
  EXPECT_GT(cut.size(), 800u);
  EXPECT_LT(cut.size(), 1000u) << "more than 4 KiB of a title was taken for it";
  EXPECT_EQ(filtered("\x1b[31\x18red?\n"), "red?\n");
  EXPECT_EQ(filtered("a\x1b\nb\n"), "a\nb\n");
}

TEST(TerminalText, ControlsAndInvisibleCharactersCannotHideText) {
  EXPECT_EQ(filtered("over\bwrite\x7f\x05\n"), "overwrite\n");
  EXPECT_EQ(filtered("tab\there\n"), "tab\there\n");
  EXPECT_EQ(filtered("rtl \xe2\x80\xae" "evil\n"), "rtl \\u202eevil\n");
  EXPECT_EQ(filtered("no newline at the end"), "no newline at the end\n");
  EXPECT_EQ(filtered(""), "");
}

}  // namespace
}  // namespace airlock
