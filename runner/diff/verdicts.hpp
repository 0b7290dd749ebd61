#pragma once
// The words a diff answers in, the same in the table, the Markdown summary and the JSON.
#include <array>
#include <string>

namespace arch_bench {

// Per row. SAME / FASTER / SLOWER / UNSURE judge the timing of a pair; ADDED / REMOVED mark a
// row that only one report has.
enum class Verdict { same, faster, slower, unsure, added, removed };
inline constexpr std::array<Verdict, 6> kAllVerdicts{Verdict::same,   Verdict::faster, Verdict::slower,
                                                      Verdict::unsure, Verdict::added,  Verdict::removed};

inline std::string verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::same: return "SAME";
    case Verdict::faster: return "FASTER";
    case Verdict::slower: return "SLOWER";
    case Verdict::unsure: return "UNSURE";
    case Verdict::added: return "ADDED";
    case Verdict::removed: return "REMOVED";
  }
  return "UNSURE";
}

// Which way a structural change goes. A regression fails the diff (exit 1) whatever --fail-on says.
enum class ChangeKind { regression, improvement, neutral };

inline std::string change_kind_name(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::regression: return "regression";
    case ChangeKind::improvement: return "improvement";
    case ChangeKind::neutral: return "neutral";
  }
  return "neutral";
}

}  // namespace arch_bench
