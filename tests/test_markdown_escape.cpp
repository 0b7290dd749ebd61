// runner/present/markdown_escape: whatever a report's text holds, it arrives in Markdown as inert
// characters on one line. Checked on the hostile strings of issue 42 and, as properties, on many
// random strings drawn from the characters Markdown and terminals give meaning to.
#include <cctype>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "runner/present/markdown_escape.hpp"

namespace arch_bench {
namespace {

// Characters with a meaning in Markdown, HTML or on a terminal, and a few plain ones.
constexpr char kAlphabet[] = "<>&\\`|[]()!*_~#=:/ \n\r\t\x1b\a\x7f\x01ajs\xc2\x9b\xc3\xa9";

std::string random_text(std::mt19937& random) {
  std::uniform_int_distribution<std::size_t> length(0, 40), pick(0, sizeof(kAlphabet) - 2);
  std::string text;
  for (std::size_t n = length(random); n > 0; --n) text += kAlphabet[pick(random)];
  return text;
}

// True when the character at `at` is escaped: an odd number of backslashes right before it.
bool escaped(const std::string& text, std::size_t at) {
  std::size_t slashes = 0;
  while (at > slashes && text[at - 1 - slashes] == '\\') ++slashes;
  return slashes % 2 == 1;
}

TEST(MarkdownEscape, TheHostileStringsOfTheIssueAreInert) {
  EXPECT_EQ(markdown_text("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(markdown_text("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
  EXPECT_EQ(markdown_text("[x](javascript:alert(1))"), "\\[x\\](javascript:alert(1))");
  EXPECT_EQ(markdown_text("`rm -rf`"), "\\`rm -rf\\`");
  EXPECT_EQ(markdown_text("&lt;"), "&amp;lt;");  // an entity in the text is shown, not decoded
  EXPECT_EQ(markdown_text("softmax_kv *x*"), "softmax_kv *x*");  // emphasis is harmless and left readable
  EXPECT_EQ(markdown_link_target("plots/a b(1)<x>.png"), "plots/a%20b%281%29%3Cx%3E.png");
}

TEST(MarkdownEscape, AnyTextIsOneLineWithNoTagNoLinkNoCodeSpanNoCellBreakNoControlByte) {
  std::mt19937 random(42);
  for (int i = 0; i < 20000; ++i) {
    const std::string text = random_text(random);
    const std::string out = markdown_text(text);
    ASSERT_EQ(out.find_first_of("<>\n\r\x1b\a\x7f\x01"), std::string::npos) << text;
    ASSERT_EQ(out.find("\xc2\x9b"), std::string::npos) << text;
    for (std::size_t at = 0; at < out.size(); ++at) {
      if (out[at] == '|' || out[at] == '[' || out[at] == ']' || out[at] == '`') {
        ASSERT_TRUE(escaped(out, at)) << "'" << out[at] << "' at " << at << " of " << out << " from " << text;
      }
      // Every & starts an entity arch-bench wrote: &amp; &lt; &gt;.
      if (out[at] == '&') {
        ASSERT_TRUE(out.compare(at, 5, "&amp;") == 0 || out.compare(at, 4, "&lt;") == 0 ||
                    out.compare(at, 4, "&gt;") == 0)
            << out;
      }
    }
    // Text ending in a backslash cannot escape what a printer writes after it (a cell's " |").
    ASSERT_FALSE(escaped(out + "|", out.size())) << out;
  }
}

TEST(MarkdownEscape, AnyPathIsOneLinkTargetOfSafeCharacters) {
  std::mt19937 random(7);
  for (int i = 0; i < 20000; ++i) {
    const std::string out = markdown_link_target(random_text(random));
    for (char c : out) {
      ASSERT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || std::string("-._~/%").find(c) != std::string::npos)
          << out;
    }
  }
}

}  // namespace
}  // namespace arch_bench
