#include "runner/mcp/jsonrpc.h"

#include <array>
#include <exception>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "common/json_depth.h"
#include "common/json_escape.h"
#include "common/utf8.h"
#include "common/word_scan.h"

namespace stockade::mcp::jsonrpc {

namespace {

using nlohmann::json;

// nlohmann's what() reads "[json.exception.parse_error.101] parse error at line 1, ...": keep
// the part after the bracketed tag.
std::string parse_error_detail(const std::exception& e) {
    std::string_view what = e.what();
    if (auto pos = what.find("] "); pos != std::string_view::npos) {
        what.remove_prefix(pos + 2);
    }
    return std::string(what);
}

DecodeFailure failure(ErrorCode code, std::string message, json id = nullptr) {
    return DecodeFailure{.code = code, .message = std::move(message), .id = std::move(id)};
}

// Reads the top-level "id" of a well-formed message the DOM parser gave up on (a number beyond
// a double's range), for as far as the text is read: the reply then goes to that id. Nothing
// else of the message is kept.
class IdFinder final : public json::json_sax_t {
public:
    json id = nullptr;

    bool null() override { return value(nullptr); }
    bool boolean(bool v) override { return value(v); }
    bool number_integer(number_integer_t v) override { return value(v); }
    bool number_unsigned(number_unsigned_t v) override { return value(v); }
    bool number_float(number_float_t /*v*/, const string_t& /*s*/) override {
        return value(nullptr);  // a fractional id is no id
    }
    bool string(string_t& v) override { return value(v); }
    bool binary(binary_t& /*v*/) override { return value(nullptr); }
    bool start_object(std::size_t /*n*/) override { return enter(); }
    bool end_object() override { return leave(); }
    bool start_array(std::size_t /*n*/) override { return enter(); }
    bool end_array() override { return leave(); }
    bool key(string_t& k) override {
        id_next_ = depth_ == 1 && k == "id";
        return true;
    }
    bool parse_error(std::size_t /*at*/, const std::string& /*token*/,
                     const nlohmann::detail::exception& /*e*/) override {
        return false;
    }

private:
    bool value(json v) {
        if (id_next_ && depth_ == 1) {
            id = is_valid_id(v) ? std::move(v) : json(nullptr);
        }
        id_next_ = false;
        return true;
    }
    bool enter() {
        id_next_ = false;
        ++depth_;
        return true;
    }
    bool leave() {
        --depth_;
        return true;
    }
    int depth_ = 0;
    bool id_next_ = false;
};

json readable_id(std::string_view text) {
    IdFinder finder;
    try {
        (void)json::sax_parse(text.begin(), text.end(), &finder);
    } catch (const std::exception&) {
        // What was read before the failure stands.
    }
    return finder.id;
}

Decoded decode_object(json& doc) {
    json id = nullptr;
    auto id_it = doc.find("id");
    const bool has_id = id_it != doc.end();
    if (has_id && is_valid_id(*id_it)) {
        id = *id_it;
    }

    auto version = doc.find("jsonrpc");
    if (version == doc.end() || !version->is_string() ||
        version->get_ref<const std::string&>() != "2.0") {
        return failure(ErrorCode::kInvalidRequest, R"("jsonrpc" must be "2.0")", std::move(id));
    }

    auto method = doc.find("method");
    if (method != doc.end()) {
        if (!method->is_string()) {
            return failure(ErrorCode::kInvalidRequest, "\"method\" must be a string",
                           std::move(id));
        }
        json params = nullptr;
        if (auto p = doc.find("params"); p != doc.end() && !p->is_null()) {
            if (!p->is_object() && !p->is_array()) {
                return failure(ErrorCode::kInvalidRequest, "\"params\" must be an object",
                               std::move(id));
            }
            params = std::move(*p);
        }
        std::string name = std::move(method->get_ref<std::string&>());
        if (!has_id) {
            return Message{Notification{.method = std::move(name), .params = std::move(params)}};
        }
        if (id.is_null()) {
            return failure(ErrorCode::kInvalidRequest,
                           "\"id\" must be a string or an integer (MCP forbids null ids)");
        }
        return Message{
            Request{.id = std::move(id), .method = std::move(name), .params = std::move(params)}};
    }

    auto result = doc.find("result");
    auto error = doc.find("error");
    if (result != doc.end() || error != doc.end()) {
        // A response is never answered, even a malformed one: replying could loop.
        Response response{
            .id = has_id ? *id_it : json(nullptr), .result = nullptr, .error = nullptr};
        if (result != doc.end()) {
            response.result = std::move(*result);
        }
        if (error != doc.end()) {
            response.error = std::move(*error);
        }
        return Message{std::move(response)};
    }
    return failure(ErrorCode::kInvalidRequest,
                   R"(message has neither "method" nor "result"/"error")", std::move(id));
}

}  // namespace

Decoded decode(std::string_view text) noexcept {
    try {
        if (json_nesting_depth(text, kMaxNestingDepth) > kMaxNestingDepth) {
            return failure(ErrorCode::kInvalidRequest,
                           "message nests arrays or objects deeper than " +
                               std::to_string(kMaxNestingDepth) + " levels");
        }
        json doc = json::parse(text.begin(), text.end());
        if (doc.is_array()) {
            return failure(ErrorCode::kInvalidRequest,
                           "batches are not supported: MCP removed JSON-RPC batching in protocol "
                           "2025-06-18; send one message per line");
        }
        if (!doc.is_object()) {
            return failure(ErrorCode::kInvalidRequest, "a message must be a JSON object");
        }
        return decode_object(doc);
    } catch (const json::parse_error& e) {
        return failure(ErrorCode::kParseError, "Parse error: " + parse_error_detail(e));
    } catch (const json::out_of_range& e) {
        // "number overflow parsing '1e999'": well-formed JSON with a number we cannot hold.
        // Unlike a syntax error, the id before it is certain: the reply goes to it.
        return failure(ErrorCode::kParseError, "Parse error: " + parse_error_detail(e),
                       readable_id(text));
    } catch (const std::exception& e) {
        return failure(ErrorCode::kInternalError, std::string("Internal error: ") + e.what());
    }
}

bool is_valid_id(const nlohmann::json& id) noexcept {
    return id.is_string() || id.is_number_integer();  // number_integer covers unsigned too
}

std::string id_text(const nlohmann::json& id) {
    if (id.is_string()) {
        return id.get<std::string>();
    }
    return dump(id);
}

std::string id_key(const nlohmann::json& id) {
    return dump(id);
}

namespace {

std::string nlohmann_dump(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The bytes a JSON string cannot hold as they are: the quote, the backslash, the C0 controls.
constexpr std::array<bool, 256> kNeedsEscape = [] {
    std::array<bool, 256> set{};
    for (unsigned u = 0; u < 0x20U; ++u) {
        set[u] = true;
    }
    set['"'] = true;
    set['\\'] = true;
    return set;
}();

// A string as nlohmann writes it (short escapes where JSON has them, \u00xx for the other
// controls, UTF-8 kept), a run of plain bytes at a time. Ill-formed UTF-8 goes to nlohmann,
// which replaces it with U+FFFD.
void append_string(std::string& out, std::string_view s) {
    if (!is_valid_utf8(s)) {
        out += nlohmann_dump(json(std::string(s)));
        return;
    }
    // Room for a long string and a few escapes at once, rather than growing by doubling (a
    // page of read is 50 KB), and for the newline the writer adds.
    if (s.size() > 4096) {
        out.reserve(out.size() + s.size() + s.size() / 16 + 64);
    }
    out += '"';
    const auto maybe = [](uint64_t word) {
        using namespace word_scan;
        return any_below(word, 0x20U) | any_equal(word, '"') | any_equal(word, '\\');
    };
    size_t plain = 0;  // start of the run not yet copied
    for (size_t i = 0; i < s.size(); ++i) {
        if (i % 8 == 0) {
            i = word_scan::skip_clear_words(s, i, maybe);
            if (i == s.size()) {
                break;
            }
        }
        const auto u = static_cast<unsigned char>(s[i]);
        if (!kNeedsEscape[u]) {
            continue;
        }
        out.append(s.data() + plain, i - plain);
        plain = i + 1;
        if (!append_short_json_escape(out, s[i])) {
            fmt::format_to(std::back_inserter(out), "\\u{:04x}", u);
        }
    }
    out.append(s.data() + plain, s.size() - plain);
    out += '"';
}

void append_value(std::string& out, const json& value) {
    switch (value.type()) {
        case json::value_t::object: {
            out += '{';
            for (auto it = value.cbegin(); it != value.cend(); ++it) {
                if (it != value.cbegin()) {
                    out += ',';
                }
                append_string(out, it.key());
                out += ':';
                append_value(out, it.value());
            }
            out += '}';
            break;
        }
        case json::value_t::array: {
            out += '[';
            for (auto it = value.cbegin(); it != value.cend(); ++it) {
                if (it != value.cbegin()) {
                    out += ',';
                }
                append_value(out, *it);
            }
            out += ']';
            break;
        }
        case json::value_t::string:
            append_string(out, value.get_ref<const std::string&>());
            break;
        default:  // numbers, booleans, null, binary: short, and nlohmann's own rules
            out += nlohmann_dump(value);
    }
}

}  // namespace

std::string dump(const nlohmann::json& value) {
    std::string out;
    append_value(out, value);
    return out;
}

std::string encode_result(const nlohmann::json& id, nlohmann::json result) {
    json message = json::object();
    message["jsonrpc"] = "2.0";
    message["id"] = id;
    message["result"] = std::move(result);
    return dump(message);
}

std::string encode_error(const nlohmann::json& id, ErrorCode code, std::string_view message,
                         const nlohmann::json& data) {
    json error = json::object();
    error["code"] = static_cast<int>(code);
    error["message"] = std::string(message);
    if (!data.is_null()) {
        error["data"] = data;
    }
    json reply = json::object();
    reply["jsonrpc"] = "2.0";
    if (!id.is_null()) {
        reply["id"] = id;  // omitted when the request's id could not be read (MCP 2025-11-25)
    }
    reply["error"] = std::move(error);
    return dump(reply);
}

std::string encode_notification(std::string_view method, nlohmann::json params) {
    json message = json::object();
    message["jsonrpc"] = "2.0";
    message["method"] = std::string(method);
    if (!params.is_null()) {
        message["params"] = std::move(params);
    }
    return dump(message);
}

}  // namespace stockade::mcp::jsonrpc
