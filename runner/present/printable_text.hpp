#pragma once
// Text that came from a file (a label, a note, a reason, a path) is shown to people on terminals and
// in documents. Terminal control bytes in it must not act: an ESC sequence can rewrite what the
// terminal shows (hide an error, fake a verdict), a BEL rings, a CR overwrites the line. They are
// shown escaped instead, so the reader sees that the file holds them.
#include <string>
#include <string_view>

namespace arch_bench {

// `text` with every C0 control byte except newline and tab, DEL, and the C1 controls U+0080-U+009F
// (as UTF-8) written as \xNN (\u00NN for C1); every other byte unchanged. A plain backslash is kept
// as it is: this makes controls visible, it is not a reversible encoding.
std::string escape_control_bytes(std::string_view text);

}  // namespace arch_bench
