#include "runner/session/git_index.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <map>

#include <fmt/format.h>

#include "common/syscall.h"
#include "tools/text.h"
#include "workspace/open_beneath.h"

namespace stockade::runner {

namespace {

constexpr size_t kHeaderBytes = 12;
constexpr size_t kStatBytes = 40;  // ctime, mtime, dev, ino, mode, uid, gid, size
constexpr size_t kHashBytes = 20;  // SHA-1
constexpr size_t kMaxIndexBytes = size_t{256} << 20;
constexpr size_t kMaxShown = 3;

uint32_t be32(std::string_view b, size_t at) {
    return (uint32_t{static_cast<unsigned char>(b[at])} << 24) |
           (uint32_t{static_cast<unsigned char>(b[at + 1])} << 16) |
           (uint32_t{static_cast<unsigned char>(b[at + 2])} << 8) |
           uint32_t{static_cast<unsigned char>(b[at + 3])};
}

uint16_t be16(std::string_view b, size_t at) {
    return static_cast<uint16_t>((static_cast<unsigned>(static_cast<unsigned char>(b[at])) << 8) |
                                 static_cast<unsigned char>(b[at + 1]));
}

Error malformed(std::string_view what) {
    return Error{Errc::kInvalidArgument, fmt::format("git index: {}", what)};
}

}  // namespace

Result<std::vector<std::string>> parse_git_index(std::string_view bytes) {
    ASSIGN_OR_RETURN(std::vector<GitIndexEntry> entries, parse_git_index_entries(bytes));
    std::vector<std::string> paths;
    paths.reserve(entries.size());
    for (GitIndexEntry& e : entries) {
        paths.push_back(std::move(e.path));
    }
    return paths;
}

Result<std::vector<GitIndexEntry>> parse_git_index_entries(std::string_view bytes) {
    if (bytes.size() < kHeaderBytes || bytes.substr(0, 4) != "DIRC") {
        return malformed("no DIRC header");
    }
    const uint32_t version = be32(bytes, 4);
    if (version < 2 || version > 4) {
        return malformed(fmt::format("version {} is not 2, 3 or 4", version));
    }
    const uint32_t count = be32(bytes, 8);
    // Each entry takes at least its fixed part: a count the file cannot hold is a lie.
    if (count > (bytes.size() - kHeaderBytes) / (kStatBytes + kHashBytes + 2)) {
        return malformed(fmt::format("{} entries do not fit in {} bytes", count, bytes.size()));
    }
    std::vector<GitIndexEntry> paths;
    paths.reserve(count);
    size_t at = kHeaderBytes;
    std::string previous;
    for (uint32_t i = 0; i < count; ++i) {
        const size_t start = at;
        if (bytes.size() - at < kStatBytes + kHashBytes + 2) {
            return malformed("truncated entry");
        }
        GitIndexEntry entry;
        // ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size; then the object name.
        entry.ctime_ns = int64_t{be32(bytes, at)} * 1'000'000'000 + be32(bytes, at + 4);
        entry.mtime_ns = int64_t{be32(bytes, at + 8)} * 1'000'000'000 + be32(bytes, at + 12);
        entry.ino = be32(bytes, at + 20);
        entry.mode = be32(bytes, at + 24);
        entry.size = be32(bytes, at + 36);
        static constexpr char kHex[] = "0123456789abcdef";
        for (size_t k = 0; k < kHashBytes; ++k) {
            const auto c = static_cast<unsigned char>(bytes[at + kStatBytes + k]);
            entry.blob.push_back(kHex[c >> 4U]);
            entry.blob.push_back(kHex[c & 0xFU]);
        }
        at += kStatBytes + kHashBytes;
        const uint16_t flags = be16(bytes, at);
        entry.stage = static_cast<uint8_t>((flags >> 12U) & 3U);
        at += 2;
        if ((flags & 0x4000U) != 0) {  // extended flags (version 3 and up)
            if (version < 3 || bytes.size() - at < 2) {
                return malformed("extended flags where there can be none");
            }
            at += 2;
        }
        std::string path;
        if (version == 4) {
            // How many bytes of the previous path to drop (git's offset varint), then the rest.
            uint64_t drop = 0;
            for (int n = 0;; ++n) {
                if (at >= bytes.size() || n > 9) {
                    return malformed("truncated path prefix");
                }
                const auto c = static_cast<unsigned char>(bytes[at++]);
                drop = (drop << 7U) | (c & 0x7fU);
                if ((c & 0x80U) == 0) {
                    break;
                }
                ++drop;
            }
            if (drop > previous.size()) {
                return malformed("path prefix longer than the previous path");
            }
            path = previous.substr(0, previous.size() - drop);
        }
        const size_t nul = bytes.find('\0', at);
        if (nul == std::string_view::npos) {
            return malformed("unterminated path");
        }
        path += bytes.substr(at, nul - at);
        at = nul + 1;
        if (version < 4) {
            // Padded with NULs (1 to 8 of them) to a multiple of 8 from the entry's start.
            const size_t length = at - start;
            const size_t padded = (length + 7) / 8 * 8;
            if (padded > bytes.size() - start) {
                return malformed("truncated padding");
            }
            at = start + padded;
        }
        previous = path;
        entry.path = std::move(path);
        paths.push_back(std::move(entry));
    }
    return paths;
}

std::vector<TrackedDenial> tracked_denials(const policy::Policy& policy,
                                           const std::string& workspace,
                                           const std::vector<std::string>& tracked) {
    auto denies = [&](const std::string& path) {
        return policy.evaluate_one({.kind = policy::CapabilityKind::kFileRead,
                                    .tool = "read",
                                    .path = workspace + "/" + path});
    };
    std::vector<TrackedDenial> out;
    // With the objects masked too, git has nothing to print the files from.
    if (const auto objects = denies(".git/objects/pack");
        objects.before_mode == policy::Decision::kDeny && objects.rule) {
        return out;
    }
    std::map<std::string, TrackedDenial> by_rule;  // by "text (origin)"
    for (const std::string& path : tracked) {
        const policy::RequestOutcome outcome = denies(path);
        if (outcome.before_mode != policy::Decision::kDeny || !outcome.rule) {
            continue;
        }
        TrackedDenial& d =
            by_rule[fmt::format("{} ({})", outcome.rule->text, outcome.rule->origin)];
        d.rule = outcome.rule->text;
        d.origin = outcome.rule->origin;
        if (++d.count <= kMaxShown) {
            d.first.push_back(path);
        }
    }
    for (auto& [key, d] : by_rule) {
        out.push_back(std::move(d));
    }
    return out;
}

Result<GitIndex> read_git_index(const HostDir& workspace) {
    auto fd =
        workspace::open_beneath(workspace.fd(), ".git/index", O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
    if (!fd) {
        return std::move(fd).error().wrap("open .git/index");
    }
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return Error{Errc::kFailedPrecondition, ".git/index is not a regular file"};
    }
    ASSIGN_OR_RETURN(std::string bytes, read_all(fd->get(), kMaxIndexBytes));
    GitIndex index;
    index.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    ASSIGN_OR_RETURN(index.entries, parse_git_index_entries(bytes));
    return index;
}

std::vector<TrackedDenial> git_tracked_denied(const policy::Policy& policy,
                                              const HostDir& workspace,
                                              const std::string& policy_root) {
    if (!policy.has_file_rules()) {
        return {};
    }
    // Beneath the workspace's descriptor, and never a FIFO or device planted there (O_NONBLOCK:
    // opening one must not block the supervisor).
    auto fd = workspace::open_beneath(workspace.fd(), ".git/index", O_RDONLY | O_NONBLOCK);
    struct stat st {};
    if (!fd || ::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return {};
    }
    auto bytes = read_all(fd->get(), kMaxIndexBytes);
    if (!bytes) {
        return {};
    }
    auto paths = parse_git_index(*bytes);
    if (!paths) {
        return {};
    }
    return tracked_denials(policy, policy_root.empty() ? workspace.path() : policy_root, *paths);
}

std::string tracked_denial_warning(const TrackedDenial& d) {
    const bool one = d.count == 1;
    return fmt::format(
        "{} ({}) denies {} file{} that git tracks ({}{}): the sandbox hides {}, but the rule "
        "cannot hide {} committed contents, which git prints from the repository's objects "
        "(git show HEAD:{}). Take {} out of the repository's history (and change any secret {} "
        "held), or deny Read(./.git/**) as well, which hides the repository from the session "
        "(git then does not work there).",
        d.rule, d.origin, d.count, one ? "" : "s", fmt::join(d.first, ", "),
        d.count > d.first.size() ? ", ..." : "", one ? "the file" : "the files",
        one ? "its" : "their", d.first.front(), one ? "it" : "them", one ? "it" : "they");
}

std::vector<std::string> git_tracked_denials(const policy::Policy& policy,
                                             const HostDir& workspace) {
    std::vector<std::string> warnings;
    for (const TrackedDenial& d : git_tracked_denied(policy, workspace)) {
        warnings.push_back(tracked_denial_warning(d));
    }
    return warnings;
}

std::string tracked_denials_note(const std::vector<TrackedDenial>& denials) {
    if (denials.empty()) {
        return {};
    }
    size_t count = 0;
    std::vector<std::string> shown;
    std::vector<std::string> rules;
    for (const TrackedDenial& d : denials) {
        count += d.count;
        rules.push_back(tools::escape_controls(d.rule, tools::LineBreaks::kEscape));
        for (const std::string& path : d.first) {
            if (shown.size() < kMaxShown) {
                shown.push_back(tools::listed_name(path));
            }
        }
    }
    const bool one = count == 1;
    const bool one_rule = rules.size() == 1;
    return fmt::format(
        "Note: git tracks {} that the policy denies you ({}{}; {} {}). The sandbox hides {}, "
        "but the rule{} cannot hide {} committed contents, which git prints from the "
        "repository (git show HEAD:{}): they are off limits all the same, so do not read them "
        "through git. To make the rule{} hold, the user can take {} out of the repository's "
        "history, or deny Read(./.git/**) as well.",
        one ? "a file" : fmt::format("{} files", count), fmt::join(shown, ", "),
        count > shown.size() ? ", ..." : "", one_rule ? "rule" : "rules", fmt::join(rules, ", "),
        one ? "it" : "them", one_rule ? "" : "s", one ? "its" : "their", shown.front(),
        one_rule ? "" : "s", one ? "the file" : "the files");
}

}  // namespace stockade::runner
