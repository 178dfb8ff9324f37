// Fuzzes the edit cascade. Input: FILE \0 OLD \0 NEW [\0 → replace_all]. Invariants: no crash;
// a successful edit keeps the file's BOM and CRLF convention and reports sane line numbers; a
// tolerant match (one that does not take old_string's indentation verbatim) writes its lines
// indented only with the characters the matched block (else the file) is indented with;
// and on plain text (no CR, no BOM) the exact strategies behave exactly like std::string:
// a unique occurrence is replaced as find/replace would, several are ambiguous, replace_all
// equals a left-to-right non-overlapping replace.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tools/edit_cascade.h"
#include "tools/text.h"

namespace {

using stockade::tools::EditApplied;
using stockade::tools::EditFailure;
using stockade::tools::EditFailureKind;
using stockade::tools::Strategy;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

size_t occurrences(std::string_view hay, std::string_view needle, bool overlapping) {
    size_t n = 0;
    for (size_t pos = hay.find(needle); pos != std::string_view::npos;
         pos = hay.find(needle, pos + (overlapping ? 1 : needle.size()))) {
        ++n;
    }
    return n;
}

std::string replace_all(std::string_view hay, std::string_view needle, std::string_view with) {
    std::string out;
    size_t cursor = 0;
    for (size_t pos = hay.find(needle); pos != std::string_view::npos;
         pos = hay.find(needle, pos + needle.size())) {
        out.append(hay.substr(cursor, pos - cursor));
        out.append(with);
        cursor = pos + needle.size();
    }
    out.append(hay.substr(cursor));
    return out;
}

// The content as the cascade matches it: no BOM, "\n" line breaks.
std::string normalized(std::string_view bytes) {
    if (bytes.starts_with(stockade::tools::kUtf8Bom)) {
        bytes.remove_prefix(stockade::tools::kUtf8Bom.size());
    }
    return stockade::tools::crlf_to_lf(bytes);
}

// Bit 1: a space, bit 2: a tab, in the indentation of lines[first, last)'s non-blank lines.
unsigned indent_chars(const std::vector<std::string_view>& lines, size_t first, size_t last) {
    unsigned chars = 0;
    for (size_t i = first; i < last && i < lines.size(); ++i) {
        if (stockade::tools::trim(lines[i]).empty()) {
            continue;
        }
        for (char c : stockade::tools::indentation(lines[i])) {
            chars |= c == '\t' ? 2U : 1U;
        }
    }
    return chars;
}

bool tolerant(Strategy s) {
    switch (s) {
        case Strategy::kLineTrimmed:
        case Strategy::kIndentationFlexible:
        case Strategy::kWhitespaceNormalized:
        case Strategy::kTrimmedBoundary:
        case Strategy::kBlockAnchor:
        case Strategy::kContextAware:
            return true;
        case Strategy::kExact:
        case Strategy::kEscapeNormalized:
        case Strategy::kMultiOccurrence:
            return false;
    }
    return false;
}

bool no_bare_lf(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r')) {
            return false;
        }
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t a = input.find('\0');
    if (a == std::string_view::npos) {
        return 0;
    }
    const size_t b = input.find('\0', a + 1);
    if (b == std::string_view::npos) {
        return 0;
    }
    const size_t c = input.find('\0', b + 1);
    const std::string_view file = input.substr(0, a);
    const std::string_view old_s = input.substr(a + 1, b - a - 1);
    const std::string_view new_s =
        input.substr(b + 1, c == std::string_view::npos ? std::string_view::npos : c - b - 1);
    const bool all = c != std::string_view::npos;

    const auto outcome = stockade::tools::apply_edit(
        {.file = file, .old_string = old_s, .new_string = new_s, .replace_all = all});
    const auto again = stockade::tools::apply_edit(
        {.file = file, .old_string = old_s, .new_string = new_s, .replace_all = all});
    check(outcome.index() == again.index());

    const stockade::tools::TextShape shape = stockade::tools::detect_shape(file);
    if (const auto* ok = std::get_if<EditApplied>(&outcome)) {
        check(ok->content == std::get<EditApplied>(again).content);
        check(ok->replacements >= 1);
        check(all == (ok->strategy == Strategy::kMultiOccurrence));
        check(all || ok->replacements == 1);
        check(ok->old_first_line >= 1 && ok->old_first_line <= ok->old_last_line);
        check(ok->new_first_line >= 1 && ok->new_first_line <= ok->new_last_line);
        check(ok->content != file);
        if (shape.bom) {
            check(std::string_view(ok->content).starts_with(stockade::tools::kUtf8Bom));
        }
        if (shape.crlf) {
            check(no_bare_lf(ok->content));
        }
        if (tolerant(ok->strategy) && !stockade::tools::trim(new_s).empty()) {
            const std::string before = normalized(file);
            const std::string after = normalized(ok->content);
            const std::vector<std::string_view> old_lines = stockade::tools::split_lines(before);
            const std::vector<std::string_view> new_lines = stockade::tools::split_lines(after);
            unsigned allowed = indent_chars(old_lines, ok->old_first_line - 1, ok->old_last_line);
            if (allowed == 0) {
                allowed = indent_chars(old_lines, 0, old_lines.size());
            }
            if (allowed != 0) {
                const unsigned written =
                    indent_chars(new_lines, ok->new_first_line - 1, ok->new_last_line);
                check((written & ~allowed) == 0);
            }
        }
    }

    const bool plain =
        file.find('\r') == std::string_view::npos && old_s.find('\r') == std::string_view::npos &&
        new_s.find('\r') == std::string_view::npos && !shape.bom &&
        !old_s.starts_with(stockade::tools::kUtf8Bom) &&
        !new_s.starts_with(stockade::tools::kUtf8Bom) && !old_s.empty() && old_s != new_s;
    if (!plain) {
        return 0;
    }
    const auto* ok = std::get_if<EditApplied>(&outcome);
    const auto* failed = std::get_if<EditFailure>(&outcome);
    if (all) {
        const size_t n = occurrences(file, old_s, false);
        if (n == 0) {
            check(failed != nullptr && failed->kind == EditFailureKind::kNotFound);
        } else {
            check(ok != nullptr && ok->replacements == n &&
                  ok->content == replace_all(file, old_s, new_s));
        }
        return 0;
    }
    const size_t n = occurrences(file, old_s, true);
    if (n == 1) {
        std::string expected(file);
        expected.replace(file.find(old_s), old_s.size(), new_s);
        check(ok != nullptr && ok->strategy == Strategy::kExact && ok->content == expected);
    } else if (n > 1) {
        check(failed != nullptr && failed->kind == EditFailureKind::kAmbiguous &&
              failed->strategy == Strategy::kExact && failed->locations == n);
    }
    return 0;
}
