#pragma once
// How a review's outcome is shown: the summary table and what was kept
// (text), or one JSON document (--json).

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "workspace/gate.h"

namespace airlock::cli {

/// Prints `outcome` on `out` (stdout for `airlock review`; stderr after
/// `airlock run`, whose stdout is the agent's): the table, flush conflicts,
/// held-back and skipped counts with what to do, what was flushed into
/// `workspace` and what was kept.
void printReviewText(std::FILE* out, const workspace::GateOutcome& outcome, const std::string& workspace);

/// The agent's commits a review imported, one "git: ..." line per ref
/// (with its `git log --oneline` lines and what happened to the branch),
/// or why they were refused.
void printGitImport(std::FILE* out, const workspace::GitImport& git);

/// One change as a JSON object: path, kind, lines_added/removed, flags
/// (binary, held_back, build_entry, conflict, git_metadata,
/// control_characters, non_ascii_name), modes as octal text, SHA-256s.
nlohmann::json changeItemJson(const workspace::DiffItem& item);

/// Prints `outcome` as one JSON document on stdout (`session` is its directory).
void printReviewJson(const workspace::GateOutcome& outcome, const std::string& session);

/// Prints "airlock: N changes pending [and M in conflict]; review them with:
/// airlock review -s ID" to stderr when `outcome` left changes in `session`
/// (the counts of the summary and of --json).
void printResumeHint(const workspace::GateOutcome& outcome, const std::string& stateDir, const std::string& session);

}  // namespace airlock::cli
