#include "egress/nft.h"

#include <nftables/libnftables.h>

#include <memory>
#include <sstream>

#include "common/exit_codes.h"

namespace airlock::egress {
namespace {

struct CtxDeleter {
  void operator()(nft_ctx* ctx) const { nft_ctx_free(ctx); }
};
using Ctx = std::unique_ptr<nft_ctx, CtxDeleter>;

/// Runs one nft command; returns its output.
Result<std::string> runNft(const std::string& command) {
  Ctx ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) return failWith(exit_code::kEgress, "cannot initialise libnftables");
  nft_ctx_buffer_output(ctx.get());
  nft_ctx_buffer_error(ctx.get());
  if (nft_run_cmd_from_buffer(ctx.get(), command.c_str()) != 0) {
    std::string error = nft_ctx_get_error_buffer(ctx.get());
    while (!error.empty() && error.back() == '\n') error.pop_back();
    return failWith(exit_code::kEgress, "nftables refused the egress ruleset (kernel without nf_tables?): {}",
                    error.empty() ? "no detail" : error);
  }
  return std::string(nft_ctx_get_output_buffer(ctx.get()));
}

}  // namespace

Result<> loadRuleset(const std::string& ruleset) {
  auto out = runNft(ruleset);
  if (!out) return std::unexpected(out.error());
  return {};
}

Result<std::map<std::string, uint64_t>> readCounters() {
  auto out = runNft("list counters table inet airlock");
  if (!out) return std::unexpected(out.error());
  std::map<std::string, uint64_t> counters;
  std::istringstream in(*out);
  std::string word, current;
  while (in >> word) {
    if (word == "counter") {
      in >> current;
    } else if (word == "packets" && !current.empty()) {
      uint64_t packets = 0;
      in >> packets;
      counters[current] = packets;
      current.clear();
    }
  }
  return counters;
}

}  // namespace airlock::egress
