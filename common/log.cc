#include "common/log.h"

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "common/json_escape.h"
#include "common/utf8.h"

namespace stockade::log {

namespace {

constexpr std::string_view kModules[] = {"runner", "exec",      "sandbox", "policy",
                                         "tools",  "workspace", "network", "process"};
constexpr const char* kTextPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n: %v";
// The keys every JSON record has; a field of the message with one of these names is renamed.
constexpr std::string_view kRecordKeys[] = {"ts", "level", "module", "msg"};

// Guards the creation of loggers and the first reading of STOCKADE_LOG_FORMAT.
std::mutex g_mutex;
bool g_env_format_read = false;
std::atomic<Format> g_format{Format::kText};

// The one sink every module logger writes to: a format switch is a formatter switch on it, so
// loggers that callers keep (static locals) follow it.
const spdlog::sink_ptr& stderr_sink() {
    static const spdlog::sink_ptr sink = [] {
        auto s = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
        s->set_pattern(kTextPattern);
        return s;
    }();
    return sink;
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}
bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_key_start(char c) {
    return is_alpha(c) || c == '_';
}
bool is_key_char(char c) {
    return is_alpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

// The quoted value that starts after the opening quote at s[start]: appended to `value`, with
// the end of the token returned; 0 if no quote before white space or the end closes it.
size_t parse_quoted(std::string_view s, size_t start, std::string& value) {
    for (size_t j = start; j < s.size(); ++j) {
        const char c = s[j];
        if (c == '\\' && j + 1 < s.size()) {
            const char e = s[++j];
            switch (e) {
                case '"':
                case '\\':
                    value += e;
                    break;
                case 'n':
                    value += '\n';
                    break;
                case 'r':
                    value += '\r';
                    break;
                case 't':
                    value += '\t';
                    break;
                default:  // not an escape of ours: kept as written
                    value += '\\';
                    value += e;
                    break;
            }
            continue;
        }
        if (c == '"' && (j + 1 == s.size() || is_space(s[j + 1]))) {
            return j + 1;
        }
        value += c;
    }
    return 0;
}

// The key=value token at s[i] into `field`, with the end of the token returned; 0 if the token
// there is not one.
size_t parse_pair(std::string_view s, size_t i, Field& field) {
    if (!is_key_start(s[i])) {
        return 0;
    }
    size_t k = i + 1;
    while (k < s.size() && is_key_char(s[k])) {
        ++k;
    }
    if (k == s.size() || s[k] != '=') {
        return 0;
    }
    field.key.assign(s.substr(i, k - i));
    field.value.clear();
    const size_t v = k + 1;
    if (v < s.size() && s[v] == '"') {
        return parse_quoted(s, v + 1, field.value);
    }
    size_t end = v;
    while (end < s.size() && !is_space(s[end])) {
        ++end;
    }
    field.value.assign(s.substr(v, end - v));
    return end;
}

// Messages are written "text key=value key=value": text after the last pair is taken for the
// rest of its value when that value is not quoted (why={} with a sentence in it).
void split_into(std::string_view s, SplitMessage& out) {
    out.text.clear();
    out.fields.clear();
    Field field;
    bool after_text = false;  // whether the token before is text (its white space is kept)
    size_t open_value = std::string_view::npos;  // where the last pair's unquoted value starts
    size_t text_before = 0;                      // the size of `text` at the last pair
    size_t i = 0;
    while (i < s.size()) {
        const size_t space = i;
        while (i < s.size() && is_space(s[i])) {
            ++i;
        }
        if (i == s.size()) {
            break;
        }
        if (const size_t end = parse_pair(s, i, field); end != 0) {
            const size_t value = i + field.key.size() + 1;
            open_value = value < s.size() && s[value] == '"' ? std::string_view::npos : value;
            text_before = out.text.size();
            out.fields.push_back(std::move(field));
            i = end;
            after_text = false;
            continue;
        }
        size_t end = i;
        while (end < s.size() && !is_space(s[end])) {
            ++end;
        }
        if (!out.text.empty()) {
            if (after_text) {
                out.text.append(s.substr(space, i - space));
            } else {
                out.text += ' ';
            }
        }
        out.text.append(s.substr(i, end - i));
        after_text = true;
        i = end;
    }
    if (open_value != std::string_view::npos && out.text.size() > text_before) {
        size_t end = s.size();
        while (end > open_value && is_space(s[end - 1])) {
            --end;
        }
        out.fields.back().value.assign(s.substr(open_value, end - open_value));
        out.text.resize(text_before);
    }
}

void append(spdlog::memory_buf_t& dest, std::string_view s) {
    dest.append(s.data(), s.data() + s.size());
}

// `s`, valid UTF-8, as the inside of a JSON string.
void append_escaped(spdlog::memory_buf_t& dest, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string escape;
    size_t run = 0;  // start of the bytes that need no escape
    for (size_t i = 0; i < s.size(); ++i) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b >= 0x20U && b != '"' && b != '\\' && b != 0x7FU) {
            continue;
        }
        append(dest, s.substr(run, i - run));
        escape.clear();
        if (!append_short_json_escape(escape, s[i])) {
            escape = "\\u00";
            escape += kHex[b >> 4U];
            escape += kHex[b & 0xFU];
        }
        append(dest, escape);
        run = i + 1;
    }
    append(dest, s.substr(run));
}

void append_string(spdlog::memory_buf_t& dest, std::string_view s) {
    dest.push_back('"');
    append_escaped(dest, s);
    dest.push_back('"');
}

void append_digits(spdlog::memory_buf_t& dest, unsigned value, int width) {
    char digits[8];
    for (int k = width - 1; k >= 0; --k) {
        digits[k] = static_cast<char>('0' + value % 10);
        value /= 10;
    }
    dest.append(digits, digits + width);
}

class JsonFormatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        append(dest, "{\"ts\":\"");
        append_time(msg.time, dest);
        append(dest, "Z\",\"level\":\"");
        const auto level = spdlog::level::to_string_view(msg.level);
        append(dest, std::string_view(level.data(), level.size()));
        append(dest, "\",\"module\":");
        const std::string_view module(msg.logger_name.data(), msg.logger_name.size());
        if (is_valid_utf8(module)) {
            append_string(dest, module);
        } else {
            append_string(dest, sanitize_utf8(module));
        }

        std::string_view payload(msg.payload.data(), msg.payload.size());
        if (!is_valid_utf8(payload)) {
            sanitized_ = sanitize_utf8(payload);
            payload = sanitized_;
        }
        split_into(payload, split_);
        append(dest, ",\"msg\":");
        append_string(dest, split_.text);
        for (size_t f = 0; f < split_.fields.size(); ++f) {
            std::string& key = split_.fields[f].key;
            while (key_taken(key, f)) {
                key.insert(0, 1, '_');
            }
            dest.push_back(',');
            append_string(dest, key);
            dest.push_back(':');
            append_string(dest, split_.fields[f].value);
        }
        append(dest, "}\n");
    }

    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<JsonFormatter>();
    }

private:
    // Whether `key` is a record key or the key of one of the first `before` fields.
    bool key_taken(std::string_view key, size_t before) const {
        for (auto record_key : kRecordKeys) {
            if (key == record_key) {
                return true;
            }
        }
        for (size_t f = 0; f < before; ++f) {
            if (split_.fields[f].key == key) {
                return true;
            }
        }
        return false;
    }

    // "2026-12-02T15:40:08.007", UTC; the part up to the second is kept from the record before.
    void append_time(spdlog::log_clock::time_point time, spdlog::memory_buf_t& dest) {
        const auto second = std::chrono::floor<std::chrono::seconds>(time);
        if (second != cached_second_ || cached_.empty()) {
            const time_t t = spdlog::log_clock::to_time_t(second);
            struct tm tm {};
            gmtime_r(&t, &tm);
            spdlog::memory_buf_t text;
            append_digits(text, static_cast<unsigned>(tm.tm_year + 1900), 4);
            text.push_back('-');
            append_digits(text, static_cast<unsigned>(tm.tm_mon + 1), 2);
            text.push_back('-');
            append_digits(text, static_cast<unsigned>(tm.tm_mday), 2);
            text.push_back('T');
            append_digits(text, static_cast<unsigned>(tm.tm_hour), 2);
            text.push_back(':');
            append_digits(text, static_cast<unsigned>(tm.tm_min), 2);
            text.push_back(':');
            append_digits(text, static_cast<unsigned>(tm.tm_sec), 2);
            cached_.assign(text.data(), text.size());
            cached_second_ = second;
        }
        append(dest, cached_);
        dest.push_back('.');
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time - second);
        append_digits(dest, static_cast<unsigned>(ms.count()), 3);
    }

    // Scratch, reused from record to record (a sink formats under its own lock).
    SplitMessage split_;
    std::string sanitized_;
    std::chrono::time_point<spdlog::log_clock, std::chrono::seconds> cached_second_{};
    std::string cached_;
};

void apply_format(Format format) {
    g_format = format;
    if (format == Format::kJson) {
        stderr_sink()->set_formatter(make_json_formatter());
    } else {
        stderr_sink()->set_pattern(kTextPattern);
    }
}

}  // namespace

std::optional<Format> parse_format(std::string_view name) {
    if (name == "text") {
        return Format::kText;
    }
    if (name == "json") {
        return Format::kJson;
    }
    return std::nullopt;
}

void init(std::string_view default_level) {
    std::string bad_format;
    {
        std::lock_guard lock(g_mutex);
        auto level = spdlog::level::from_str(std::string(default_level));
        for (auto name : kModules) {
            if (spdlog::get(std::string(name)) != nullptr) {
                continue;
            }
            auto logger = std::make_shared<spdlog::logger>(std::string(name), stderr_sink());
            logger->set_level(level);
            spdlog::register_logger(logger);
        }
        spdlog::cfg::load_env_levels();
        if (!g_env_format_read) {
            g_env_format_read = true;
            const char* env = std::getenv("STOCKADE_LOG_FORMAT");
            if (env != nullptr && *env != '\0') {
                if (auto format = parse_format(env)) {
                    apply_format(*format);
                } else {
                    bad_format = env;
                }
            }
        }
    }
    if (!bad_format.empty()) {
        SPDLOG_LOGGER_WARN(spdlog::get("runner"),
                           "STOCKADE_LOG_FORMAT ignored: not text or json value=\"{}\"",
                           bad_format);
    }
}

void set_format(Format format) {
    std::lock_guard lock(g_mutex);
    apply_format(format);
}

Format format() {
    return g_format;
}

std::shared_ptr<spdlog::logger> get(std::string_view module) {
    const std::string name(module);
    if (auto logger = spdlog::get(name)) {
        return logger;
    }
    init();
    std::lock_guard lock(g_mutex);
    if (auto logger = spdlog::get(name)) {
        return logger;
    }
    // A module of no kModules entry: a logger of its own on the same sink, at the runner's level.
    auto logger = std::make_shared<spdlog::logger>(name, stderr_sink());
    const auto runner = spdlog::get("runner");
    logger->set_level(runner != nullptr ? runner->level() : spdlog::level::warn);
    spdlog::register_logger(logger);
    return logger;
}

SplitMessage split_message(std::string_view message) {
    SplitMessage out;
    split_into(message, out);
    return out;
}

std::unique_ptr<spdlog::formatter> make_json_formatter() {
    return std::make_unique<JsonFormatter>();
}

}  // namespace stockade::log
