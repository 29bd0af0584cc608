#pragma once
// Which Debian mirror the base rootfs is bootstrapped from: the host's own,
// when its apt sources name one for Debian 12 (bookworm), else deb.debian.org.
// Parsing is pure; hostAptSources() is the only part that reads files.

#include <string>
#include <string_view>
#include <vector>

namespace airlock::image {

/// The Debian release the base rootfs is built from.
inline constexpr std::string_view kDebianSuite = "bookworm";

/// One `deb` entry of an apt sources file.
struct AptSource {
  std::string uri;    ///< e.g. "http://deb.debian.org/debian"
  std::string suite;  ///< e.g. "bookworm-security"
};

/// The `deb` entries of a one-line-style sources.list text ("deb [opts] URI
/// SUITE COMPONENT..."); comments, deb-src and malformed lines are skipped.
std::vector<AptSource> parseSourcesList(std::string_view text);

/// The `deb` entries of a deb822-style .sources text (stanzas with Types,
/// URIs, Suites; "Enabled: no" stanzas are skipped).
std::vector<AptSource> parseDeb822Sources(std::string_view text);

/// The `deb` entries of the host's /etc/apt/sources.list and
/// /etc/apt/sources.list.d/*.list and *.sources (unreadable files skipped).
std::vector<AptSource> hostAptSources();

/// The sources.list lines for the base rootfs: `suite`, `suite`-updates and
/// `suite`-security, main component, from the URIs `sources` uses for
/// `suite` and `suite`-security, or deb.debian.org when it has none.
std::vector<std::string> debianSourceLines(const std::vector<AptSource>& sources, std::string_view suite);

}  // namespace airlock::image
