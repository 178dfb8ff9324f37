// The one matcher behind the policy's wildcards: `*` matches any run of characters, every other
// element of the pattern exactly one character, as `match_one` says. Greedy with one backtrack
// point: since every element but `*` consumes exactly one character, retrying from the last `*`
// is enough, and the cost stays O(len(pattern) * len(text)).
#pragma once

#include <cstddef>
#include <string_view>

namespace stockade::policy {

// `match_one(pattern, p, c, next)`: whether the element of `pattern` at `p` (never `*`) matches
// the character `c`; if so, `next` is where the following element starts.
template <class MatchOne>
bool star_match(std::string_view pattern, std::string_view text, MatchOne match_one) {
    size_t p = 0;
    size_t t = 0;
    size_t star_p = std::string_view::npos;
    size_t star_t = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star_p = ++p;
            star_t = t;
            continue;
        }
        size_t next = 0;
        if (p < pattern.size() && match_one(pattern, p, text[t], next)) {
            p = next;
            ++t;
            continue;
        }
        if (star_p == std::string_view::npos) {
            return false;
        }
        p = star_p;
        t = ++star_t;
    }
    while (p < pattern.size() && pattern[p] == '*') {
        ++p;
    }
    return p == pattern.size();
}

}  // namespace stockade::policy
