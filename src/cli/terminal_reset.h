#pragma once
// Undoing what a guest program may have left on the user's terminal (it wrote
// to it raw through a pty): before airlock prints its own lines after an
// agent session, and before the review talks on the terminal.

#include <string_view>

namespace airlock::cli {

/// Colors and attributes off (SGR 0, so a conceal left by the agent cannot
/// hide the review), the alternate screen left without moving the cursor
/// (entered then left: leaving restores the cursor saved on entering, so a
/// bare "leave" would put it back where a full-screen agent started and the
/// review would be drawn over airlock's last lines), the cursor shown, the scroll
/// region reset (cursor saved and restored around it), G0 back to ASCII,
/// autowrap on, insert mode off, bracketed paste and mouse reporting off,
/// normal cursor keys and keypad. No full reset (RIS): it would clear the
/// user's screen and scrollback.
inline constexpr std::string_view kTerminalReset =
    "\033[0m\033[?1049h\033[?1049l\033[?25h\0337\033[r\0338\033(B\033[?7h\033[4l\033[?2004l"
    "\033[?1000l\033[?1002l\033[?1003l\033[?1006l\033[?1l\033>";

/// Writes kTerminalReset to `fd` when it is a terminal.
void resetTerminal(int fd);

/// resetTerminal(), then discards the terminal's unread input, so keys typed
/// (or queued by the guest) before the review cannot answer its first prompt.
void prepareReviewTerminal(int fd);

}  // namespace airlock::cli
