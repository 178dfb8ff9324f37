#include "tools/similar.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace stockade::tools {
namespace {

std::string_view basename(std::string_view path) {
    const size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

size_t diff(size_t a, size_t b) {
    return a > b ? a - b : b - a;
}

}  // namespace

size_t levenshtein(std::string_view a, std::string_view b, size_t max_distance) {
    if (a.size() < b.size()) {
        std::swap(a, b);
    }
    if (a.size() - b.size() > max_distance) {
        return max_distance == SIZE_MAX ? a.size() : max_distance + 1;
    }
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        size_t row_min = row[0];
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + cost});
            diagonal = above;
            row_min = std::min(row_min, row[j]);
        }
        if (row_min > max_distance) {
            return max_distance + 1;
        }
    }
    return row[b.size()];
}

size_t osa_distance(std::string_view a, std::string_view b) {
    // Three rows of the (a.size()+1) x (b.size()+1) table: two back, one back, this one.
    std::vector<size_t> two_back(b.size() + 1);
    std::vector<size_t> one_back(b.size() + 1);
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) {
        one_back[j] = j;
    }
    for (size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            row[j] = std::min({one_back[j] + 1, row[j - 1] + 1, one_back[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                row[j] = std::min(row[j], two_back[j - 2] + 1);
            }
        }
        std::swap(two_back, one_back);
        std::swap(one_back, row);
    }
    return one_back[b.size()];
}

double similarity(std::string_view a, std::string_view b) {
    const size_t longest = std::max(a.size(), b.size());
    if (longest == 0) {
        return 1.0;
    }
    return 1.0 - static_cast<double>(levenshtein(a, b)) / static_cast<double>(longest);
}

std::vector<std::string> suggest_paths(std::string_view missing,
                                       const std::vector<std::string>& candidates,
                                       size_t max_results) {
    const std::string_view missing_base = basename(missing);
    const size_t path_limit = std::max<size_t>(2, missing.size() / 3);
    const size_t base_limit = std::max<size_t>(1, missing_base.size() / 4);

    // (score, length, path): lower is better.
    std::set<std::tuple<size_t, size_t, std::string>> ranked;
    for (const std::string& candidate : candidates) {
        if (candidate == missing || candidate.empty()) {
            continue;
        }
        size_t score = SIZE_MAX;
        if (diff(candidate.size(), missing.size()) <= path_limit) {
            const size_t d = levenshtein(missing, candidate, path_limit);
            if (d <= path_limit) {
                score = d;
            }
        }
        const std::string_view base = basename(candidate);
        if (!missing_base.empty() && diff(base.size(), missing_base.size()) <= base_limit) {
            const size_t d = levenshtein(missing_base, base, base_limit);
            // Right name, wrong directory: rank it just after close whole-path spellings.
            if (d <= base_limit) {
                score = std::min(score, d + 2);
            }
        }
        if (score != SIZE_MAX) {
            ranked.emplace(score, candidate.size(), candidate);
        }
    }
    std::vector<std::string> out;
    for (const auto& entry : ranked) {
        if (out.size() == max_results) {
            break;
        }
        out.push_back(std::get<2>(entry));
    }
    return out;
}

std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates,
                                   size_t max_distance) {
    std::optional<std::string> best;
    size_t best_distance = max_distance + 1;
    for (const std::string& candidate : candidates) {
        const size_t d = levenshtein(word, candidate, max_distance);
        if (d < best_distance) {
            best_distance = d;
            best = candidate;
        }
    }
    return best;
}

}  // namespace stockade::tools
