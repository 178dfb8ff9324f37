// One named spdlog logger per module, all writing to stderr (never stdout: the MCP protocol may
// own it). SPDLOG_LEVEL=info,sandbox=trace tunes them without a rebuild; STOCKADE_LOG_FORMAT=json
// (or --log-format json) writes each record as one JSON object per line, for log collectors.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

namespace stockade::log {

enum class Format { kText, kJson };

// "text" or "json"; nullopt for anything else.
std::optional<Format> parse_format(std::string_view name);

// Creates the module loggers, applies SPDLOG_LEVEL and STOCKADE_LOG_FORMAT. Call once, early in
// main.
void init(std::string_view default_level = "warn");

// Switches every logger to `format` (the --log-format flag, which overrides the environment).
void set_format(Format format);
// The format records are written in now.
Format format();

std::shared_ptr<spdlog::logger> get(std::string_view module);

// A message split the way the JSON format writes it. Every `key=value` token (key: a letter or
// `_`, then letters, digits, `_`, `.` or `-`; value: up to the next white space, or a quoted
// "string" with \" \\ \n \r \t escapes that ends at a quote before white space or the end) is a
// field; the other tokens, in order, are `text`. Messages are "text key=value key=value": text
// after the last pair, when its value is not quoted, is the rest of that value ("why=no such
// file" is why: "no such file").
struct Field {
    std::string key;
    std::string value;
};
struct SplitMessage {
    std::string text;
    std::vector<Field> fields;
};
SplitMessage split_message(std::string_view message);

// The JSON formatter: {"ts":"2026-12-02T15:40:08.007Z","level":"info","module":"runner",
// "msg":"session opened","tenant":"alpha",...} and a newline. A field whose key is taken (ts,
// level, module, msg or an earlier field's) gets a `_` in front until it is not. Always valid
// JSON: control characters are escaped, ill-formed UTF-8 is replaced by U+FFFD.
std::unique_ptr<spdlog::formatter> make_json_formatter();

}  // namespace stockade::log
