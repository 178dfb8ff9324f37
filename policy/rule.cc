#include "policy/rule.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

namespace stockade::policy {
namespace {

using std::string_view_literals::operator""sv;

struct SubjectName {
    std::string_view name;
    Subject subject;
};

constexpr std::array kSubjects = {
    SubjectName{"Read", Subject::kRead},
    SubjectName{"Write", Subject::kWrite},
    SubjectName{"Edit", Subject::kEdit},
    SubjectName{"Grep", Subject::kGrep},
    SubjectName{"Glob", Subject::kGlob},
    SubjectName{"Bash", Subject::kBash},
    SubjectName{"Process", Subject::kProcess},
    SubjectName{"network.access", Subject::kNetworkAccess},
    SubjectName{"git.modify", Subject::kGitModify},
    SubjectName{"file.write.outsideProject", Subject::kFileWriteOutsideProject},
    SubjectName{"process.execute", Subject::kProcessExecute},
    // Claude Code's WebFetch tool: we have none, but its domain rules say which hosts may be
    // reached, which is what network.access decides. After "network.access", so that
    // subject_name() names the capability.
    SubjectName{"WebFetch", Subject::kNetworkAccess},
};

bool is_path_subject(Subject subject) {
    switch (subject) {
        case Subject::kRead:
        case Subject::kWrite:
        case Subject::kEdit:
        case Subject::kGrep:
        case Subject::kGlob:
        case Subject::kFileWriteOutsideProject:
            return true;
        case Subject::kBash:
        case Subject::kProcess:
        case Subject::kNetworkAccess:
        case Subject::kGitModify:
        case Subject::kProcessExecute:
            return false;
    }
    return false;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        auto lower = [](char c) {
            return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
        };
        if (lower(a[i]) != lower(b[i])) {
            return false;
        }
    }
    return true;
}

bool valid_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-' || c == ':';
}

// Parentheses inside the specifier must balance, ignoring those in quotes: "Bash(echo ')')"
// is fine, "Bash(echo (x)" is not.
bool balanced(std::string_view text) {
    int depth = 0;
    char quote = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote != 0) {
            if (c == '\\' && quote == '"') {
                ++i;
            } else if (c == quote) {
                quote = 0;
            }
        } else if (c == '\\') {
            ++i;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '(') {
            ++depth;
        } else if (c == ')' && --depth < 0) {
            return false;
        }
    }
    return depth == 0;
}

std::string unknown_tool_warning(std::string_view name, std::string_view text) {
    for (const SubjectName& known : kSubjects) {
        if (equal_ignoring_case(known.name, name)) {
            return fmt::format(
                "rule \"{}\" names an unknown tool \"{}\" (names are case-sensitive: did you "
                "mean \"{}\"?); ignored",
                text, name, known.name);
        }
    }
    if (name.starts_with("mcp__")) {
        return fmt::format(
            "rule \"{}\" is for an MCP server's tool, which stockade does not "
            "run; ignored",
            text);
    }
    return fmt::format(R"(rule "{}" names a tool stockade does not have ("{}"); ignored)", text,
                       name);
}

Result<PathPattern> compile_path(std::string_view spec, const RuleAnchors& anchors) {
    if (spec.starts_with("//")) {
        return PathPattern::compile("/", spec.substr(2));
    }
    if (spec == "~" || spec.starts_with("~/")) {
        if (anchors.home.empty()) {
            return Error{Errc::kInvalidArgument,
                         "the rule starts with \"~/\" but the home directory is not known"};
        }
        return PathPattern::compile(normalise_path(anchors.home, "/"),
                                    spec.size() > 2 ? spec.substr(2) : "");
    }
    if (spec.starts_with("/")) {
        return PathPattern::compile(normalise_path(anchors.settings_dir, "/"), spec.substr(1));
    }
    return PathPattern::compile(normalise_path(anchors.workspace_root, "/"), spec);
}

}  // namespace

const char* subject_name(Subject subject) noexcept {
    for (const SubjectName& known : kSubjects) {
        if (known.subject == subject) {
            return known.name.data();
        }
    }
    return "unknown";
}

Result<std::optional<Rule>> Rule::parse(std::string_view text, Decision decision,
                                        const RuleAnchors& anchors, std::string& warning) {
    warning.clear();
    const size_t first = text.find_first_not_of(" \t");
    const size_t last = text.find_last_not_of(" \t");
    if (first == std::string_view::npos) {
        return Error{Errc::kInvalidArgument, "empty rule"};
    }
    const std::string_view trimmed = text.substr(first, last - first + 1);
    const size_t open = trimmed.find('(');
    std::string_view name = trimmed.substr(0, open);
    std::string_view spec;
    if (open == std::string_view::npos) {
        if (trimmed.find(')') != std::string_view::npos) {
            return Error{Errc::kInvalidArgument, "unbalanced parentheses: \")\" without \"(\""};
        }
    } else {
        if (trimmed.back() != ')') {
            return Error{Errc::kInvalidArgument,
                         "unbalanced parentheses: the rule must end with \")\""};
        }
        spec = trimmed.substr(open + 1, trimmed.size() - open - 2);
        if (!balanced(spec)) {
            return Error{Errc::kInvalidArgument, "unbalanced parentheses in the specifier"};
        }
    }
    if (name.empty()) {
        return Error{Errc::kInvalidArgument, "a rule starts with a tool name, as in Read(./src)"};
    }
    for (char c : name) {
        if (!valid_name_char(c)) {
            return Error{
                Errc::kInvalidArgument,
                fmt::format("\"{}\" is not a tool name (write Tool or Tool(specifier))", name)};
        }
    }
    const SubjectName* known = nullptr;
    for (const SubjectName& candidate : kSubjects) {
        if (candidate.name == name) {
            known = &candidate;
        }
    }
    if (known == nullptr) {
        warning = unknown_tool_warning(name, trimmed);
        return std::optional<Rule>();
    }

    if (name == "WebFetch"sv) {
        // WebFetch(domain:HOST): Claude Code's form; another specifier is a URL pattern, which
        // nothing of ours can check (the proxy sees hosts and ports, not URLs).
        std::string_view inner = spec;
        while (!inner.empty() && (inner.front() == ' ' || inner.front() == '\t')) {
            inner.remove_prefix(1);
        }
        if (!inner.empty() && inner != "*" && !inner.starts_with("domain:")) {
            warning = fmt::format(
                "rule \"{}\": a WebFetch rule counts as network.access only in the "
                "WebFetch(domain:HOST) form; ignored",
                trimmed);
            return std::optional<Rule>();
        }
    }

    Rule rule;
    rule.subject_ = known->subject;
    rule.decision_ = decision;
    rule.text_ = trimmed;
    std::string_view spec_trimmed = spec;
    while (!spec_trimmed.empty() && (spec_trimmed.front() == ' ' || spec_trimmed.front() == '\t')) {
        spec_trimmed.remove_prefix(1);
    }
    while (!spec_trimmed.empty() && (spec_trimmed.back() == ' ' || spec_trimmed.back() == '\t')) {
        spec_trimmed.remove_suffix(1);
    }
    rule.whole_ = spec_trimmed.empty() || spec_trimmed == "*";
    if (rule.whole_) {
        return std::optional<Rule>(std::move(rule));
    }
    rule.specifier_ = spec_trimmed;
    if (is_path_subject(rule.subject_)) {
        ASSIGN_OR_RETURN(PathPattern pattern, compile_path(rule.specifier_, anchors));
        rule.path_ = std::move(pattern);
    } else if (rule.subject_ == Subject::kNetworkAccess) {
        ASSIGN_OR_RETURN(rule.host_, HostPattern::parse(rule.specifier_));
        // "domain:*" is every host on every port: the whole capability.
        rule.whole_ = rule.host_.kind() == HostPattern::Kind::kAny && rule.host_.port() == 0;
    } else if (rule.subject_ == Subject::kGitModify) {
        for (char c : rule.specifier_) {
            if (!((c >= 'a' && c <= 'z') || c == '-' || c == '*')) {
                return Error{Errc::kInvalidArgument,
                             fmt::format("\"{}\" is not a git subcommand or a glob of them "
                                         "(\"push\", \"*\")",
                                         rule.specifier_)};
            }
        }
        rule.glob_ = rule.specifier_;
    } else {
        rule.command_ = CommandPattern::compile(rule.specifier_);
    }
    return std::optional<Rule>(std::move(rule));
}

Result<Rule> Rule::network_access(std::string_view domain, Decision decision) {
    Rule rule;
    rule.subject_ = Subject::kNetworkAccess;
    rule.decision_ = decision;
    rule.text_ = fmt::format("network.access({})", domain);
    rule.specifier_ = domain;
    ASSIGN_OR_RETURN(rule.host_, HostPattern::parse(domain));
    rule.whole_ = rule.host_.kind() == HostPattern::Kind::kAny && rule.host_.port() == 0;
    return rule;
}

bool Rule::covers(CapabilityKind kind) const {
    switch (subject_) {
        case Subject::kRead:
        case Subject::kGrep:
        case Subject::kGlob:
            return kind == CapabilityKind::kFileRead;
        case Subject::kWrite:
        case Subject::kEdit:
            return kind == CapabilityKind::kFileWrite;
        case Subject::kFileWriteOutsideProject:
            return kind == CapabilityKind::kFileWriteOutsideProject;
        case Subject::kBash:
        case Subject::kProcessExecute:
            return kind == CapabilityKind::kProcessExecute;
        case Subject::kProcess:
            return kind == CapabilityKind::kProcessExecute ||
                   (whole_ && kind == CapabilityKind::kTool);
        case Subject::kNetworkAccess:
            return kind == CapabilityKind::kNetworkAccess;
        case Subject::kGitModify:
            return kind == CapabilityKind::kGitModify;
    }
    return false;
}

bool Rule::command_matches(const CapabilityRequest& request) const {
    if (whole_) {
        return true;
    }
    // An unparsed command cannot be split into simple commands, so a prefix or a wildcard
    // could allow something hidden after it ("npm test; curl x" with a stray quote): only an
    // exact allow rule counts. Deny and ask rules still match it any way they can.
    if (request.opaque && decision_ == Decision::kAllow &&
        command_.kind() != CommandPattern::Kind::kExact) {
        return false;
    }
    return command_.matches(request.command) ||
           (request.full_command != request.command && command_.matches(request.full_command));
}

// A rule with a port decides connections to that port. A request whose port is not known (0:
// a command's analysis, before anything connects) is matched by it only when the rule is an
// allow and the request names a host: that host may be reached, and the allowlist proxy holds
// each connection to the rule's port when it is made. A deny or ask limited to a port does not
// refuse or question a whole command for a port it may never use; the proxy applies it to the
// connection. An unknown host is never matched by a rule with a port, so that `*:443` is not
// "the network, outright".
bool Rule::network_matches(const CapabilityRequest& request) const {
    if (whole_) {
        return true;
    }
    const uint16_t port = host_.port();
    if (port != 0 && request.port != port &&
        (request.port != 0 || decision_ != Decision::kAllow || request.host.empty())) {
        return false;
    }
    if (request.host.empty()) {
        return host_.kind() == HostPattern::Kind::kAny;
    }
    // The proxy and the analysis give lower-case names; normalise anything else (case, a
    // trailing dot, brackets, an IP literal's spelling) before comparing.
    const std::string_view host = request.host;
    const bool plain = std::none_of(host.begin(), host.end(),
                                    [](char c) { return (c >= 'A' && c <= 'Z') || c == ':'; }) &&
                       !host.ends_with('.') && !host.starts_with('[');
    return plain ? host_.matches_host(host) : host_.matches_host(normalise_host(host));
}

bool Rule::matches(const CapabilityRequest& request, const PathView* path) const {
    if (!covers(request.kind)) {
        return false;
    }
    auto path_ok = [&] {
        return whole_ || (path != nullptr && path_->matches(*path, request.directory));
    };
    switch (subject_) {
        case Subject::kRead:
        case Subject::kWrite:
        case Subject::kEdit:
        case Subject::kFileWriteOutsideProject:
            return path_ok();
        case Subject::kGrep:
            return request.tool == "grep"sv && path_ok();
        case Subject::kGlob:
            return request.tool == "glob"sv && path_ok();
        case Subject::kBash:
            return request.tool == "bash"sv && command_matches(request);
        case Subject::kProcess:
            return request.tool == "process"sv &&
                   (request.kind == CapabilityKind::kTool || command_matches(request));
        case Subject::kProcessExecute:
            return command_matches(request);
        case Subject::kNetworkAccess:
            return network_matches(request);
        case Subject::kGitModify:
            return whole_ || wildcard_match(glob_, request.subcommand);
    }
    return false;
}

}  // namespace stockade::policy
