#include "policy/settings.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "policy/json_locate.h"

namespace stockade::policy {
namespace {

using nlohmann::json;

// A settings file is a few kilobytes; these only stop hostile input early.
constexpr size_t kMaxSettingsBytes = 4 << 20;
constexpr size_t kMaxNesting = 64;

struct ListName {
    std::string_view key;
    Decision decision;
};
constexpr std::array kLists = {ListName{"allow", Decision::kAllow}, ListName{"ask", Decision::kAsk},
                               ListName{"deny", Decision::kDeny}};

// Claude Code's permission modes, mapped onto the preset closest to their meaning. Our own
// preset names are accepted too.
std::optional<Preset> preset_for_mode(std::string_view mode) {
    if (mode == "default" || mode == "acceptEdits") {
        return Preset::kWorkspaceWrite;
    }
    if (mode == "plan") {
        return Preset::kReadOnly;
    }
    if (mode == "bypassPermissions") {
        return Preset::kDangerFullAccess;
    }
    return parse_preset(mode);
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 2: " preamble: we print our own position.
std::string parse_error_text(const json::exception& e) {
    std::string_view what = e.what();
    if (what.starts_with('[')) {
        if (const size_t end = what.find("] "); end != std::string_view::npos) {
            what.remove_prefix(end + 2);
        }
    }
    if (what.starts_with("parse error")) {
        if (const size_t colon = what.find(": "); colon != std::string_view::npos) {
            what.remove_prefix(colon + 2);
        }
    }
    return std::string(what);
}

// Where the token quoted in `what` ('...') first occurs in `text`, or 0.
size_t quoted_token_offset(std::string_view text, std::string_view what) {
    const size_t open = what.find('\'');
    const size_t close = what.rfind('\'');
    if (open == std::string_view::npos || close <= open + 1) {
        return 0;
    }
    const size_t at = text.find(what.substr(open + 1, close - open - 1));
    return at == std::string_view::npos ? 0 : at;
}

std::string dirname(std::string_view path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string_view::npos || slash == 0) {
        return "/";
    }
    return std::string(path.substr(0, slash));
}

class SettingsParser {
public:
    SettingsParser(const SettingsSource& source, const RuleAnchors& anchors)
        : source_(source), anchors_(anchors) {}

    Result<Settings> run() {
        const std::string_view text = source_.text;
        if (text.size() > kMaxSettingsBytes) {
            return Error{Errc::kInvalidArgument,
                         fmt::format("{}: the settings file is larger than {} MiB", source_.origin,
                                     kMaxSettingsBytes >> 20)};
        }
        if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
            out_.warnings.push_back(
                fmt::format("{}: the settings file is empty; it adds no rules", source_.origin));
            return std::move(out_);
        }
        if (auto deep = too_deep(text, kMaxNesting)) {
            return error_at(*deep,
                            fmt::format("invalid JSON: nested deeper than {} levels", kMaxNesting));
        }
        json doc;
        try {
            doc = json::parse(text);
        } catch (const json::parse_error& e) {
            // e.byte is the 1-based index of the last character read: the offending one.
            return error_at(e.byte > 0 ? e.byte - 1 : 0, "invalid JSON: " + parse_error_text(e));
        } catch (const json::exception& e) {
            // A number too large for a double ("number overflow parsing '1e999'"): no byte
            // position, but the message quotes the token.
            return error_at(quoted_token_offset(text, e.what()),
                            "invalid JSON: " + parse_error_text(e));
        }
        where_ = locate_values(text, 4);  // deep enough for /sandbox/network/allowedDomains/0
        if (!doc.is_object()) {
            return error_at(offset(""), fmt::format("expected a JSON object at the top level, "
                                                    "got {}",
                                                    doc.type_name()));
        }
        for (const auto& [key, value] : doc.items()) {
            if (key != "permissions" && key != "sandbox" && key != "$schema") {
                warn(json_pointer_append("", key),
                     fmt::format("\"{}\" is not used by stockade (only \"permissions\" and "
                                 "\"sandbox\" are); ignored",
                                 key));
            }
        }
        if (const auto sandbox = doc.find("sandbox"); sandbox != doc.end()) {
            RETURN_IF_ERROR(parse_sandbox(*sandbox));
        }
        const auto permissions = doc.find("permissions");
        if (permissions == doc.end()) {
            if (doc.contains("sandbox")) {
                return std::move(out_);
            }
            out_.warnings.push_back(fmt::format(
                "{}: no \"permissions\" object; the file adds no rules", source_.origin));
            return std::move(out_);
        }
        RETURN_IF_ERROR(parse_permissions(*permissions));
        return std::move(out_);
    }

private:
    size_t offset(const std::string& pointer) const {
        const auto it = where_.find(pointer);
        return it == where_.end() ? 0 : it->second;
    }

    size_t line_of(const std::string& pointer) const {
        return position_of(source_.text, offset(pointer)).line;
    }

    Error error_at(size_t at, std::string_view what) const {
        const TextPosition pos = position_of(source_.text, at);
        return Error{Errc::kInvalidArgument,
                     fmt::format("{}:{}:{}: {}", source_.origin, pos.line, pos.column, what)};
    }

    void warn(const std::string& pointer, std::string_view what) {
        out_.warnings.push_back(fmt::format("{}:{}: {}", source_.origin, line_of(pointer), what));
    }

    Status parse_permissions(const json& permissions) {
        const std::string pointer = "/permissions";
        if (!permissions.is_object()) {
            return error_at(offset(pointer), fmt::format("\"permissions\" must be an object, "
                                                         "got {}",
                                                         permissions.type_name()));
        }
        for (const auto& [key, value] : permissions.items()) {
            const std::string child = json_pointer_append(pointer, key);
            if (key == "allow" || key == "ask" || key == "deny") {
                continue;
            }
            if (key == "defaultMode") {
                parse_default_mode(value, child);
            } else if (key == "additionalDirectories") {
                warn(child,
                     "\"permissions.additionalDirectories\" is ignored: the sandbox "
                     "mounts only the workspace");
            } else {
                warn(child,
                     fmt::format("\"permissions.{}\" is not used by stockade; ignored", key));
            }
        }
        // In allow, ask, deny order, whatever the file's order, so a file's rules come out
        // the same however its keys are arranged.
        for (const ListName& list : kLists) {
            const auto it = permissions.find(list.key);
            if (it != permissions.end()) {
                RETURN_IF_ERROR(parse_list(*it, list, json_pointer_append(pointer, list.key)));
            }
        }
        return ok_status();
    }

    Status parse_sandbox(const json& sandbox) {
        const std::string pointer = "/sandbox";
        if (!sandbox.is_object()) {
            return error_at(offset(pointer), fmt::format("\"sandbox\" must be an object, got {}",
                                                         sandbox.type_name()));
        }
        for (const auto& [key, value] : sandbox.items()) {
            const std::string child = json_pointer_append(pointer, key);
            if (key == "filesystem") {
                RETURN_IF_ERROR(parse_filesystem(value, child));
            } else if (key == "env") {
                RETURN_IF_ERROR(parse_strings(
                    value, child, "sandbox.env",
                    [&](const std::string& v, const std::string& at) -> Status {
                        const std::string name = v.substr(0, v.find('='));
                        if (!valid_env_name(name)) {
                            return error_at(offset(at), fmt::format("sandbox.env: \"{}\" is not a "
                                                                    "variable name",
                                                                    name));
                        }
                        out_.sandbox.env.push_back(entry(v, at));
                        return ok_status();
                    }));
            } else if (key == "enabled" || key == "autoAllowBashIfSandboxed" ||
                       key == "allowUnsandboxedCommands" || key == "excludedCommands" ||
                       key == "enableWeakerNestedSandbox") {
                warn(child, fmt::format("\"sandbox.{}\" does not apply: every stockade command "
                                        "runs in the sandbox; ignored",
                                        key));
            } else if (key == "network") {
                RETURN_IF_ERROR(parse_network(value, child));
            } else {
                warn(child, fmt::format("\"sandbox.{}\" is not used by stockade; ignored", key));
            }
        }
        return ok_status();
    }

    // sandbox.network: allowedDomains and deniedDomains become network.access allow and deny
    // rules of this file's layer; allowManagedDomainsOnly (managed layer only) locks the allowed
    // hosts to the managed file's; the rest of Claude Code's keys describe its own proxy and
    // sandbox and are warnings.
    Status parse_network(const json& network, const std::string& pointer) {
        if (!network.is_object()) {
            return error_at(offset(pointer), fmt::format("\"sandbox.network\" must be an "
                                                         "object, got {}",
                                                         network.type_name()));
        }
        for (const auto& item : network.items()) {
            const std::string key = item.key();
            const json& value = item.value();
            const std::string child = json_pointer_append(pointer, key);
            if (key == "allowedDomains" || key == "deniedDomains") {
                const Decision decision =
                    key == "allowedDomains" ? Decision::kAllow : Decision::kDeny;
                RETURN_IF_ERROR(parse_strings(
                    value, child, "sandbox.network." + key,
                    [&](const std::string& v, const std::string& at) -> Status {
                        auto rule = Rule::network_access(v, decision);
                        if (!rule) {
                            return error_at(offset(at), fmt::format("sandbox.network.{}: {}", key,
                                                                    rule.error().message));
                        }
                        rule->layer = source_.layer;
                        rule->origin = fmt::format("{}:{}", source_.origin, line_of(at));
                        out_.rules.push_back(std::move(*rule));
                        return ok_status();
                    }));
            } else if (key == "resolve") {
                RETURN_IF_ERROR(parse_strings(
                    value, child, "sandbox.network.resolve",
                    [&](const std::string& v, const std::string& at) -> Status {
                        if (v.find('=') == std::string::npos) {
                            return error_at(offset(at),
                                            fmt::format("sandbox.network.resolve: \"{}\" is not "
                                                        "NAME[:PORT]=ADDRESS[:PORT]",
                                                        v));
                        }
                        out_.sandbox.resolve.push_back(entry(v, at));
                        return ok_status();
                    }));
            } else if (key == "allowManagedDomainsOnly") {
                if (!value.is_boolean()) {
                    return error_at(offset(child),
                                    fmt::format("\"sandbox.network.allowManagedDomainsOnly\" "
                                                "must be true or false, got {}",
                                                value.type_name()));
                }
                if (source_.layer != Layer::kManaged) {
                    warn(child,
                         "\"sandbox.network.allowManagedDomainsOnly\" counts only in the managed "
                         "settings file; ignored");
                } else if (value.get<bool>()) {
                    out_.managed_domains_only = true;
                    out_.managed_domains_only_origin =
                        fmt::format("{}:{}", source_.origin, line_of(child));
                }
            } else if (key == "allowUnixSockets" || key == "allowAllUnixSockets") {
                warn(child, fmt::format("\"sandbox.network.{}\" is ignored: a host socket is "
                                        "reachable in the sandbox only when its path is mounted "
                                        "(--rw, sandbox.filesystem.allowWrite)",
                                        key));
            } else if (key == "allowLocalBinding") {
                warn(child,
                     "\"sandbox.network.allowLocalBinding\" is ignored: commands may always "
                     "listen on the sandbox's loopback, which is its own (not the host's) unless "
                     "--network host");
            } else if (key == "httpProxyPort" || key == "socksProxyPort") {
                warn(child, fmt::format("\"sandbox.network.{}\" is ignored: with --network "
                                        "allowlist stockade's own proxy decides each connection by "
                                        "the network.access rules; another proxy cannot take its "
                                        "place",
                                        key));
            } else if (key == "allowMachLookup") {
                warn(child, "\"sandbox.network.allowMachLookup\" is for macOS; ignored");
            } else {
                warn(child,
                     fmt::format("\"sandbox.network.{}\" is not used by stockade; ignored", key));
            }
        }
        return ok_status();
    }

    Status parse_filesystem(const json& fs, const std::string& pointer) {
        if (!fs.is_object()) {
            return error_at(offset(pointer), fmt::format("\"sandbox.filesystem\" must be an "
                                                         "object, got {}",
                                                         fs.type_name()));
        }
        const std::array<std::pair<std::string_view, std::vector<SandboxEntry>*>, 4> lists = {
            {{"allowRead", &out_.sandbox.allow_read},
             {"allowWrite", &out_.sandbox.allow_write},
             {"denyRead", &out_.sandbox.deny_read},
             {"denyWrite", &out_.sandbox.deny_write}}};
        for (const auto& item : fs.items()) {
            const std::string key = item.key();  // a variable (clang 14 cannot capture a binding)
            const json& value = item.value();
            const std::string child = json_pointer_append(pointer, key);
            const auto list = std::find_if(lists.begin(), lists.end(),
                                           [&](const auto& l) { return l.first == key; });
            if (list == lists.end()) {
                warn(child, fmt::format(
                                "\"sandbox.filesystem.{}\" is not used by stockade; ignored", key));
                continue;
            }
            RETURN_IF_ERROR(parse_strings(
                value, child, "sandbox.filesystem." + key,
                [&](const std::string& v, const std::string& at) -> Status {
                    auto path = anchored_path(v);
                    if (!path) {
                        return error_at(offset(at), fmt::format("sandbox.filesystem.{}: \"{}\": {}",
                                                                key, v, path.error().message));
                    }
                    list->second->push_back(entry(*path, at));
                    return ok_status();
                }));
        }
        return ok_status();
    }

    // An array of strings, each handed to `each` with its JSON pointer.
    template <class Each>
    Status parse_strings(const json& list, const std::string& pointer, const std::string& name,
                         Each each) {
        if (!list.is_array()) {
            return error_at(offset(pointer), fmt::format("\"{}\" must be an array of strings, "
                                                         "got {}",
                                                         name, list.type_name()));
        }
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string child = json_pointer_append(pointer, std::to_string(i));
            if (!list[i].is_string()) {
                return error_at(offset(child), fmt::format("{}[{}] must be a string, got {}", name,
                                                           i, list[i].type_name()));
            }
            RETURN_IF_ERROR(each(list[i].get<std::string>(), child));
        }
        return ok_status();
    }

    // Claude Code's anchors for sandbox paths: "//x" absolute, "~/x" the home, "/x" the
    // settings directory, "./x" and "x" the workspace. Globs are not paths one can mount.
    Result<std::string> anchored_path(const std::string& text) const {
        if (text.empty()) {
            return Error{Errc::kInvalidArgument, "an empty path"};
        }
        if (text.find_first_of("*?[") != std::string::npos) {
            return Error{Errc::kInvalidArgument,
                         "a sandbox path is a path, not a pattern (no *, ? or [)"};
        }
        if (text.starts_with("//")) {
            return normalise_path(text.substr(1), "/");
        }
        if (text == "~" || text.starts_with("~/")) {
            if (anchors_.home.empty()) {
                return Error{Errc::kInvalidArgument, "\"~\" is unknown here (no home directory)"};
            }
            return normalise_path(text == "~" ? "." : text.substr(2), anchors_.home);
        }
        if (text.starts_with('/')) {
            return normalise_path(text.substr(1), anchors_.settings_dir);
        }
        return normalise_path(text, anchors_.workspace_root);
    }

    SandboxEntry entry(std::string value, const std::string& pointer) const {
        return SandboxEntry{.value = std::move(value),
                            .layer = source_.layer,
                            .origin = fmt::format("{}:{}", source_.origin, line_of(pointer))};
    }

    static bool valid_env_name(std::string_view name) {
        if (name.empty() || (name.front() >= '0' && name.front() <= '9')) {
            return false;
        }
        return std::all_of(name.begin(), name.end(), [](char c) {
            return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   c == '_';
        });
    }

    void parse_default_mode(const json& value, const std::string& pointer) {
        const std::optional<Preset> preset =
            value.is_string() ? preset_for_mode(value.get<std::string>()) : std::nullopt;
        if (!preset) {
            warn(pointer, fmt::format("\"permissions.defaultMode\" {} has no stockade preset "
                                      "(use default, acceptEdits, plan, bypassPermissions or a "
                                      "preset name); ignored",
                                      value.dump(-1, ' ', false, json::error_handler_t::replace)));
            return;
        }
        out_.preset = preset;
        out_.preset_origin = fmt::format("{}:{}", source_.origin, line_of(pointer));
    }

    Status parse_list(const json& list, const ListName& name, const std::string& pointer) {
        if (!list.is_array()) {
            return error_at(offset(pointer),
                            fmt::format("\"permissions.{}\" must be an array of rule strings, "
                                        "got {}",
                                        name.key, list.type_name()));
        }
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string child = json_pointer_append(pointer, std::to_string(i));
            const json& element = list[i];
            if (!element.is_string()) {
                return error_at(offset(child),
                                fmt::format("permissions.{}[{}] must be a string, got {}", name.key,
                                            i, element.type_name()));
            }
            const auto& text = element.get_ref<const std::string&>();
            std::string warning;
            auto rule = Rule::parse(text, name.decision, anchors_, warning);
            if (!rule) {
                return error_at(offset(child),
                                fmt::format("rule \"{}\": {}", text, rule.error().message));
            }
            if (!warning.empty()) {
                warn(child, warning);
            }
            if (rule->has_value()) {
                Rule& compiled = **rule;
                compiled.layer = source_.layer;
                compiled.origin = fmt::format("{}:{}", source_.origin, line_of(child));
                out_.rules.push_back(std::move(compiled));
            }
        }
        return ok_status();
    }

    const SettingsSource& source_;
    const RuleAnchors& anchors_;
    std::map<std::string, size_t> where_;
    Settings out_;
};

}  // namespace

std::string settings_base_dir(const SettingsSource& source, std::string_view workspace_root) {
    if (!source.base_dir.empty()) {
        return normalise_path(source.base_dir, workspace_root);
    }
    if (!source.origin.starts_with('/')) {
        return normalise_path(workspace_root, "/");
    }
    std::string dir = dirname(normalise_path(source.origin, "/"));
    const std::string_view dir_view = dir;
    const std::string_view name = dir_view.substr(dir_view.rfind('/') + 1);
    if (name == ".stockade" || name == ".claude") {
        dir = dirname(dir);
    }
    return dir;
}

Result<Settings> parse_settings(const SettingsSource& source, const RuleAnchors& anchors) {
    return SettingsParser(source, anchors).run();
}

SettingsSource command_line_source(std::span<const std::string> allow,
                                   std::span<const std::string> ask,
                                   std::span<const std::string> deny) {
    std::string text = "{\"permissions\": {\n";
    const std::array<std::pair<std::string_view, std::span<const std::string>>, 3> lists = {
        {{"allow", allow}, {"ask", ask}, {"deny", deny}}};
    bool first_list = true;
    for (const auto& [key, rules] : lists) {
        text += fmt::format("{}\"{}\": [\n", first_list ? "" : ",\n", key);
        first_list = false;
        for (size_t i = 0; i < rules.size(); ++i) {
            text += json(rules[i]).dump(-1, ' ', false, json::error_handler_t::replace);
            text += i + 1 < rules.size() ? ",\n" : "\n";
        }
        text += "]";
    }
    text += "\n}}\n";
    return SettingsSource{.layer = Layer::kCommandLine, .origin = "command line", .text = text};
}

}  // namespace stockade::policy
