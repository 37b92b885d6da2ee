// common/printable.h — text from clients (names, chain names) made safe to log: printable
// ASCII only and bounded, so that it cannot start a line of its own, move the cursor or
// colour the terminal of whoever reads paamd's log.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace paam {

// `text` with every byte outside printable ASCII (0x20..0x7e) written as \xNN and a backslash
// as \\, at most `max_bytes` long: a longer result is cut and ends in "...".
inline std::string Printable(std::string_view text, size_t max_bytes = 64) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  size_t cut = 0;  // the longest whole-piece prefix that leaves room for "..."
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
    }
    if (out.size() > max_bytes) return out.substr(0, cut) + std::string("...").substr(0, max_bytes - cut);
    if (out.size() + 3 <= max_bytes) cut = out.size();
  }
  return out;
}

}  // namespace paam
