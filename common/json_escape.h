// JSON's short escapes, for the places that write a JSON string literal by hand: the MCP
// serializer (runner/mcp/jsonrpc.cc) and the names a listing quotes (tools/text.cc).
#pragma once

#include <string>

namespace stockade {

// Appends the two-character escape JSON has for `c` (\" \\ \b \f \n \r \t) and returns true;
// returns false, appending nothing, for any other byte.
inline bool append_short_json_escape(std::string& out, char c) {
    switch (c) {
        case '"':
            out += "\\\"";
            return true;
        case '\\':
            out += "\\\\";
            return true;
        case '\b':
            out += "\\b";
            return true;
        case '\f':
            out += "\\f";
            return true;
        case '\n':
            out += "\\n";
            return true;
        case '\r':
            out += "\\r";
            return true;
        case '\t':
            out += "\\t";
            return true;
        default:
            return false;
    }
}

}  // namespace stockade
