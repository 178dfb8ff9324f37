#include "common/strict_json.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/json_depth.h"

namespace stockade {
namespace {

using json = nlohmann::json;

// "invalid JSON at line 3, column 5: ...": nlohmann's message without its
// "[json.exception.parse_error.101] parse error" prefix.
std::string json_error_text(const json::exception& e) {
    std::string_view what = e.what();
    if (const std::size_t end = what.find("] "); what.starts_with('[') && end != what.npos) {
        what.remove_prefix(end + 2);
    }
    if (what.starts_with("parse error at ")) {
        what.remove_prefix(std::string_view("parse error ").size());
        return fmt::format("invalid JSON {}", what);
    }
    return fmt::format("invalid JSON: {}", what);
}

}  // namespace

Result<json> parse_strict_json(std::string_view text, std::size_t max_depth) {
    if (json_nesting_depth(text, max_depth) > max_depth) {
        return Error{Errc::kInvalidArgument,
                     fmt::format("invalid JSON: nested deeper than {} levels", max_depth)};
    }
    struct Open {  // an object or array being read
        std::string path;
        bool array = false;
        std::size_t items = 0;         // of an array: how many so far
        std::string key{};             // of an object: the latest
        std::set<std::string> keys{};  // of an object: every one so far
    };
    std::vector<Open> open;
    std::string repeated;
    bool found_repeat = false;
    auto next_path = [&]() -> std::string {
        if (open.empty()) {
            return "";
        }
        Open& parent = open.back();
        if (parent.array) {
            return fmt::format("{}[{}]", parent.path, parent.items++);
        }
        return parent.path.empty() ? parent.key : parent.path + "." + parent.key;
    };
    auto note = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                open.push_back(
                    {.path = next_path(), .array = event == json::parse_event_t::array_start});
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                open.pop_back();
                break;
            case json::parse_event_t::key:
                open.back().key = parsed.get<std::string>();
                if (!open.back().keys.insert(open.back().key).second && !found_repeat) {
                    found_repeat = true;
                    repeated = next_path();
                }
                break;
            case json::parse_event_t::value:
                next_path();  // counts an array's item
                break;
        }
        return true;
    };
    json doc;
    try {
        doc = json::parse(text, note);
    } catch (const json::exception& e) {
        return Error{Errc::kInvalidArgument, json_error_text(e)};
    }
    if (found_repeat) {
        return Error{Errc::kInvalidArgument, fmt::format("{}: given twice", repeated)};
    }
    return doc;
}

}  // namespace stockade
