#pragma once
// The prefixes that well-known credentials start with (API keys, OAuth
// tokens, personal access tokens): how airlock tells a word that may be a
// token, so that it is never stored as a name or repeated in a message.

#include <array>
#include <string_view>

namespace airlock {

/// Token prefixes, as their issuers spell them: OpenAI/Anthropic keys
/// (sk-), Stripe (sk_live_), GitHub (ghp_, gho_, ghs_, ghu_, ghr_,
/// github_pat_), GitLab (glpat-, glrt-), Slack (xoxb-, xoxp-, xapp-), npm
/// (npm_), Hugging Face (hf_), Google OAuth (ya29.) and API keys (AIza),
/// AWS access keys (AKIA, ASIA), JWTs (eyJ), xAI (xai-).
inline constexpr std::array<std::string_view, 21> kTokenPrefixes = {
    "sk-",   "sk_live_", "ghp_",  "gho_", "ghs_", "ghu_",  "ghr_", "github_pat_", "glpat-", "glrt-", "xoxb-",
    "xoxp-", "xapp-",    "npm_",  "hf_",  "ya29.", "AIza", "AKIA", "ASIA",        "eyJ",    "xai-"};

/// True when `word` starts with one of kTokenPrefixes (as spelled there).
bool startsLikeToken(std::string_view word);

}  // namespace airlock
