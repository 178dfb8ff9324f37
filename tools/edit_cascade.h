// The edit cascade (TOOL_PROTOCOL §4.3–4.4, DESIGN §7): find old_string in a file's bytes and
// replace it with new_string, tolerating the ways models misquote text, but never guessing.
// Pure: bytes in, bytes out; the edit tool does the I/O, the stamps and the messages.
//
// Matching runs on the content normalised to "\n" with the BOM split off; both are restored in
// the result. Strategies run in order and the first one that finds anything wins:
//   1 exact                  old_string verbatim
//   2 line-trimmed           same lines once each is trimmed; whole lines are replaced
//   3 whitespace-normalized  runs of whitespace collapsed to one space (within a line for a
//                            one-line old_string, line by line otherwise)
//   4 indentation-flexible   not a separate pass: strategy 2 is reported under this name when
//                            the block differs from old_string only by one uniform indentation
//                            shift (the model quoted it at the wrong depth)
//   5 escape-normalized      old_string with \n \t \" \' \\ unescaped matches verbatim; the
//                            same unescaping is applied to new_string
//   6 trimmed-boundary       old_string with surrounding whitespace trimmed matches verbatim
//   7 block-anchor           ≥3 lines; first and last lines match trimmed; middle lines
//                            similar (Levenshtein ≥ 0.65 on average); size within ±25%
//   8 context-aware          ≥3 lines; anchors match and ≥50% of middle lines match trimmed
//   9 multi-occurrence       replace_all: every exact occurrence (no fuzzy mass replace)
//
// The indentation rule (DESIGN §7) applies to every whitespace-tolerant block match: when the
// file's block is old_string shifted by one uniform indentation and new_string sits at
// old_string's depth, new_string is shifted by the same amount; when new_string already sits
// at the file's depth it is inserted as written.
//
// Guards: a strategy that finds several distinct locations fails as ambiguous (it never picks
// one); a fuzzy (7, 8) match much larger than old_string is refused as disproportionate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace stockade::tools {

enum class Strategy : uint8_t {
    kExact,
    kLineTrimmed,
    kWhitespaceNormalized,
    kIndentationFlexible,
    kEscapeNormalized,
    kTrimmedBoundary,
    kBlockAnchor,
    kContextAware,
    kMultiOccurrence,
};

// Metadata name: "exact", "line-trimmed", ... "multi-occurrence".
std::string_view strategy_name(Strategy strategy);
// Model-facing parenthetical after "1 replacement, ": "matched exactly", "matched with
// whitespace normalization", ...
std::string_view strategy_phrase(Strategy strategy);

inline constexpr double kBlockAnchorThreshold = 0.65;
inline constexpr double kContextAwareThreshold = 0.5;

struct EditSpec {
    std::string_view file{};  // the file's bytes as on disk
    std::string_view old_string{};
    std::string_view new_string{};
    bool replace_all = false;
};

struct EditApplied {
    std::string content{};  // the new bytes: BOM and line endings as the file had them
    Strategy strategy = Strategy::kExact;
    size_t replacements = 0;
    bool reindented = false;  // new_string was shifted to the file's indentation
    // The first replaced region, 1-based lines: in the old content and in the new one.
    size_t old_first_line = 0;
    size_t old_last_line = 0;
    size_t new_first_line = 0;
    size_t new_last_line = 0;
};

// The closest block to old_string when nothing matched (for "Closest near-miss is at …").
struct NearMiss {
    size_t first_line = 0;  // 1-based, inclusive
    size_t last_line = 0;
    size_t line = 0;  // the first line that differs
    bool whitespace_only = false;
    std::string expected{};  // old_string's line
    std::string actual{};    // the file's line
    double score = 0;
};

enum class EditFailureKind : uint8_t {
    kEmptyOldString,
    kIdentical,         // old_string == new_string
    kNotFound,          // near_miss may be set
    kAmbiguous,         // strategy, lines
    kDisproportionate,  // strategy, first/last_line, candidate_chars
    kNoChange,          // a tolerant match whose text already equals new_string
};

struct EditFailure {
    EditFailureKind kind = EditFailureKind::kNotFound;
    Strategy strategy = Strategy::kExact;
    size_t locations = 0;         // kAmbiguous: how many distinct locations matched
    std::vector<size_t> lines{};  // kAmbiguous: their 1-based first lines (distinct, sorted)
    std::optional<NearMiss> near_miss{};
    size_t first_line = 0;  // kDisproportionate, kNoChange
    size_t last_line = 0;
    size_t candidate_chars = 0;  // kDisproportionate
    size_t old_chars = 0;
};

using EditOutcome = std::variant<EditApplied, EditFailure>;

EditOutcome apply_edit(const EditSpec& spec);

}  // namespace stockade::tools
