// The edit cascade (TOOL_PROTOCOL §4.3–4.4, DESIGN §7): find old_string in a file's bytes and
// replace it with new_string, tolerating the ways models misquote text, but never guessing.
// Pure: bytes in, bytes out; the edit tool does the I/O, the stamps and the messages.
//
// Matching runs on the content normalised to "\n" with the BOM split off; both are restored in
// the result. Strategies run in order and the first one that finds anything wins:
//   1 exact                  old_string verbatim
//   2 line-trimmed           same lines once each is trimmed; whole lines are replaced
//   3 whitespace-normalized  runs of whitespace collapsed to one space. A one-line old_string
//                            matches within a line. A longer one matches a window of as many
//                            whole lines of the file: line by line if any window matches that
//                            way; otherwise the window and old_string collapsed as a whole, line
//                            breaks counting as whitespace, so a line break may have moved to
//                            another gap between the same tokens: "if (a &&\n    b)" matches
//                            "if (a\n    && b)", but "foo(a,\n    b)" does not match
//                            "foo(a, b\n)" (old_string has no gap before ")"). The first and
//                            last lines of the window are blank only where old_string's are.
//                            The window is replaced whole.
//   4 indentation-flexible   not a separate pass: strategy 2 is reported under this name when
//                            the block's indentation differs from old_string's (the model quoted
//                            it at the wrong depth, with tabs for spaces, or with drift)
//   5 escape-normalized      old_string with \n \t \" \' \\ unescaped matches verbatim; the
//                            same unescaping is applied to new_string
//   6 trimmed-boundary       old_string with surrounding whitespace trimmed matches verbatim
//   7 block-anchor           ≥3 lines; first and last lines match trimmed; middle lines
//                            similar (Levenshtein ≥ 0.65 on average); size within ±25%
//   8 context-aware          ≥3 lines; anchors match and ≥50% of middle lines match trimmed
//   9 multi-occurrence       replace_all: every exact occurrence (no fuzzy mass replace)
//
// The indentation rule (DESIGN §7) applies to every match that does not take old_string's
// indentation verbatim (2, 3, 6, 7, 8), once the match is known to be unique. It pairs
// old_string's lines with the file lines they matched (7: the anchors only; 3 across moved line
// breaks: the first line only):
//   - the same indentation on every pair: new_string is inserted as written;
//   - one uniform shift (the model quoted the block at the wrong depth): new_string is shifted
//     by it when it sits at old_string's depth, and inserted as written when it already sits at
//     the file's depth (or at a depth of its own);
//   - anything else (tabs for spaces, another indent unit, per-line drift): new_string is
//     re-indented line by line. A line at the indentation of old_string's line k takes the
//     file's indentation of line k, k being, for a changed line, the line it replaces (the
//     old_string line as far after the last line both keep: a here-document's tab-indented body
//     keeps its tabs), else the nearest such k to where the line sits in new_string (lines
//     aligned by their text); a line N of the model's indent units deeper or shallower than such
//     a line takes that indentation plus or minus N of the file's units (in a file that mixes
//     tabs and spaces: N of the block's own steps). The model's unit is what old_string's
//     matched lines at two or more depths of the file show (one margin plus one string per
//     level), else the step its lines take most; a line that is not a whole number of those
//     units from any old_string line has no depth in the file and is refused, never written at
//     a guessed one. Blank lines are written empty. new_string is
//     inserted as written instead when it already uses the file's indentation: its unchanged
//     lines carry the file's indentation rather than old_string's, or, with none to tell, more
//     of its lines use an indentation only the file's block has than one only old_string has.
// Whichever applies, every written non-blank line must then be indented only with characters
// the file's block uses (tabs, spaces; the whole file decides when the block has none); a
// result that is not, and cannot be re-indented so, is refused (kIndentation) with the line
// that shows the file's indentation. A partial-line match (3 within a line, 6) keeps the
// file's text before it; its first line counts as sitting at old_string's indentation.
//
// Line endings: a CRLF file stays CRLF. In a file with both endings every line the edit leaves
// alone keeps its own, new_string's lines that equal the replaced text's first or last lines
// keep theirs, and every other line break new_string adds takes the file's dominant ending
// (the more frequent one; on a tie the ending of the file's first line break).
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
    bool reindented = false;  // new_string's indentation was changed to the file's
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

// kIndentation: the line that shows the model how the file is indented.
struct IndentationHint {
    size_t line = 0;             // 1-based file line
    std::string file_line{};     // that line as the file has it
    std::string model_line{};    // old_string's line for it, or (in_new_string) new_string's line
    bool in_new_string = false;  // model_line is a new_string line that has no place in the file
};

enum class EditFailureKind : uint8_t {
    kEmptyOldString,
    kIdentical,         // old_string == new_string
    kNotFound,          // near_miss may be set
    kAmbiguous,         // strategy, lines
    kDisproportionate,  // strategy, first/last_line, candidate_chars
    kNoChange,          // a tolerant match whose text already equals new_string
    kIndentation,       // new_string cannot be re-indented: strategy, first/last_line, indentation
};

struct EditFailure {
    EditFailureKind kind = EditFailureKind::kNotFound;
    Strategy strategy = Strategy::kExact;
    size_t locations = 0;         // kAmbiguous: how many distinct locations matched
    std::vector<size_t> lines{};  // kAmbiguous: their 1-based first lines (distinct, sorted)
    std::optional<NearMiss> near_miss{};
    size_t first_line = 0;  // kDisproportionate, kNoChange, kIndentation
    size_t last_line = 0;
    size_t candidate_chars = 0;  // kDisproportionate
    size_t old_chars = 0;
    std::optional<IndentationHint> indentation{};
};

using EditOutcome = std::variant<EditApplied, EditFailure>;

EditOutcome apply_edit(const EditSpec& spec);

}  // namespace stockade::tools
