// One permission rule: `Tool`, `Tool(specifier)` or a capability rule, in Claude Code's syntax,
// compiled at load so that evaluation only runs matchers (docs/policy.md has the grammar).
//   Read(./src/**)  Edit(//etc/**)  Bash(npm run test:*)  Process  network.access(*.npmjs.org)
//   network.access(pypi.org:443)  WebFetch(domain:example.com)  git.modify(push)
//   file.write.outsideProject(~/.cache/**)  process.execute(make:*)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "policy/capability.h"
#include "policy/command_pattern.h"
#include "policy/decision.h"
#include "policy/host_pattern.h"
#include "policy/path_pattern.h"

namespace stockade::policy {

// What a rule is about: one of our tools by Claude's name, or a capability.
enum class Subject : uint8_t {
    kRead,   // file.read from any tool (Claude applies Read rules to Grep and Glob too)
    kWrite,  // file.write from any tool (Edit and Write are the same to us)
    kEdit,
    kGrep,     // file.read by the grep tool only
    kGlob,     // file.read by the glob tool only
    kBash,     // process.execute by the bash tool
    kProcess,  // process.execute by process start; whole-tool rules also cover its other actions
    kNetworkAccess,  // network.access(DOMAIN[:PORT]); also Claude Code's WebFetch(domain:HOST)
    kGitModify,
    kFileWriteOutsideProject,
    kProcessExecute,  // process.execute from bash or process
};

const char* subject_name(Subject subject) noexcept;  // as written in rules: "Read", "git.modify"

// Where path anchors point when a rule is compiled.
struct RuleAnchors {
    std::string workspace_root{};  // "./x" and "x"
    std::string home{};            // "~/x"; empty: such rules are an error
    std::string settings_dir{};    // "/x"
};

class Rule {
public:
    // Parses `text`. Malformed text (unbalanced parentheses, a bad specifier) is an error; a
    // well-formed rule for a tool we do not have (WebSearch, mcp__x) is std::nullopt with
    // `warning` set. `WebFetch` and `WebFetch(domain:HOST)` are network.access rules (any host /
    // HOST); another WebFetch specifier (a URL) is a warning.
    static Result<std::optional<Rule>> parse(std::string_view text, Decision decision,
                                             const RuleAnchors& anchors, std::string& warning);
    // The network.access rule for one entry of sandbox.network.allowedDomains / deniedDomains
    // (or a network preset): `domain` is a HostPattern specifier; the rule's text is
    // "network.access(<domain>)".
    static Result<Rule> network_access(std::string_view domain, Decision decision);

    // `path` is the request's PathView when it has a path, else nullptr.
    [[nodiscard]] bool matches(const CapabilityRequest& request, const PathView* path) const;
    // True when the rule can match requests of `kind` (used to index the rules by kind).
    [[nodiscard]] bool covers(CapabilityKind kind) const;
    // True when the rule names a whole tool: no specifier, or "*".
    [[nodiscard]] bool whole() const { return whole_; }

    [[nodiscard]] Subject subject() const { return subject_; }
    [[nodiscard]] Decision decision() const { return decision_; }
    [[nodiscard]] const std::string& text() const { return text_; }
    [[nodiscard]] const std::string& specifier() const { return specifier_; }

    // Set by the settings loader.
    Layer layer = Layer::kProject;
    std::string origin;  // "file:line"

    [[nodiscard]] RuleRef ref() const { return {text_, origin, layer, decision_}; }

private:
    Rule() = default;
    [[nodiscard]] bool command_matches(const CapabilityRequest& request) const;
    [[nodiscard]] bool network_matches(const CapabilityRequest& request) const;

    Subject subject_ = Subject::kRead;
    Decision decision_ = Decision::kDeny;
    std::string text_;
    std::string specifier_;
    bool whole_ = true;
    std::optional<PathPattern> path_;
    CommandPattern command_;
    HostPattern host_;  // network.access
    std::string glob_;  // git subcommand wildcard
};

}  // namespace stockade::policy
