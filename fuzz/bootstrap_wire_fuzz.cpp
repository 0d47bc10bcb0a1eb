// libFuzzer target for the bootstrap's wire decoders
// (lci/bootstrap/detail/wire.hpp): everything a PMI server or lcirun sends
// a rank goes through one of them. Each input exercises one decoder on the
// rest of its bytes. Every decoder must either accept or throw
// std::runtime_error (wire.hpp: "Every malformed input throws
// std::runtime_error"); any other exception, an assertion or an ASan report
// is a failure. What is accepted must round-trip through the matching
// encoder:
//   hex       hex_encode(hex_decode(t)) == t in lower case; refused exactly
//             when t has odd length or a non-hex character
//   kvs       a value read back from PMI key chunks (kvs_chunk_count, then
//             kvs_value_join): at most value_size_bytes_max bytes, and
//             kvs_value_chunks of it decodes to the same bytes
//   pmi1      pmi1_parse(line): cmd and keys non-empty; pmi1_format of it
//             refuses only values with '=' (which PMI-1 cannot write) and
//             otherwise parses back to the same message
//   pmi2_len  pmi2_parse_length: 1..pmi2_frame_length_max, and the length
//             pmi2_format writes parses back to it
//   pmi2      pmi2_parse(body): pmi2_format of it is a frame whose length
//             field is right and whose body parses back to the same message
//   lines     fd_channel_t::read_line over a pipe holding the bytes: lines
//             without '\n', at most line_length_max long, which with their
//             '\n's are exactly the stream's prefix
//
// Input format: byte 0 % 6 picks the decoder (in the order above); byte 1
// is its parameter (kvs: value_length_max = kvs_value_length_min + b % 64;
// lines: line_length_max = 1 + b % 64); the rest is the text (kvs: chunks
// separated by '\n').
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"
#include "lci/bootstrap/detail/wire.hpp"

namespace {

namespace wire = lci::bootstrap::detail;

// A pipe holds at least this much without a reader (Linux: 64 KiB).
constexpr std::size_t lines_bytes_max = 4096;

[[noreturn]] void fail(const char* decoder, const char* what, std::string_view text) {
  std::fprintf(stderr, "bootstrap_wire_fuzz: %s: %s (input of %zu bytes)\n", decoder, what,
               text.size());
  std::abort();
}

bool same(const wire::pmi_message_t& a, const wire::pmi_message_t& b) {
  return a.cmd == b.cmd && a.fields == b.fields;
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

void check_hex(std::string_view text) {
  bool well_formed = text.size() % 2 == 0;
  for (char c : text) well_formed = well_formed && is_hex(c);
  std::vector<std::byte> bytes;
  try {
    bytes = wire::hex_decode(text);
  } catch (const std::runtime_error&) {
    if (well_formed) fail("hex", "refused well-formed hex", text);
    return;
  }
  if (!well_formed) fail("hex", "accepted malformed hex", text);
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  if (wire::hex_encode(bytes.data(), bytes.size()) != lower) fail("hex", "no round trip", text);
}

void check_kvs(std::string_view text, std::size_t value_length_max) {
  std::vector<std::string> chunks;
  for (std::size_t start = 0;;) {
    const std::size_t end = text.find('\n', start);
    chunks.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::vector<std::byte> value;
  try {
    const std::size_t count = wire::kvs_chunk_count(chunks.front(), value_length_max);
    // pmi_kvs_bootstrap_t::get fetches exactly `count` chunks; a missing
    // one is its own error, not the decoder's.
    if (count == 0 || count > chunks.size()) return;
    chunks.resize(count);
    value = wire::kvs_value_join(chunks);
  } catch (const std::runtime_error&) {
    return;
  }
  if (value.size() > lci::bootstrap::value_size_bytes_max) fail("kvs", "value over the limit", text);
  const std::vector<std::string> again =
      wire::kvs_value_chunks(value.data(), value.size(), value_length_max);
  if (wire::kvs_chunk_count(again.front(), value_length_max) != again.size()) {
    fail("kvs", "re-encoded chunk count disagrees", text);
  }
  if (wire::kvs_value_join(again) != value) fail("kvs", "no round trip", text);
}

void check_pmi1(std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));  // what read_line returns
  wire::pmi_message_t message;
  try {
    message = wire::pmi1_parse(line);
  } catch (const std::runtime_error&) {
    return;
  }
  if (message.cmd.empty()) fail("pmi1", "empty cmd accepted", text);
  bool has_equals = message.cmd.find('=') != std::string::npos;
  for (const auto& [key, value] : message.fields) {
    if (key.empty()) fail("pmi1", "empty key accepted", text);
    has_equals = has_equals || value.find('=') != std::string::npos;
  }
  std::string formatted;
  try {
    formatted = wire::pmi1_format(message);
  } catch (const std::invalid_argument&) {
    if (!has_equals) fail("pmi1", "a parsed message cannot be formatted", text);
    return;
  }
  if (has_equals) fail("pmi1", "formatted a value with '='", text);
  if (formatted.empty() || formatted.back() != '\n') fail("pmi1", "line without '\\n'", text);
  formatted.pop_back();
  if (!same(wire::pmi1_parse(formatted), message)) fail("pmi1", "no round trip", text);
}

void check_pmi2_length(std::string_view text) {
  std::string field(text.substr(0, wire::pmi2_length_field_size));
  field.resize(wire::pmi2_length_field_size, ' ');
  std::size_t length = 0;
  try {
    length = wire::pmi2_parse_length(field);
  } catch (const std::runtime_error&) {
    return;
  }
  if (length == 0 || length > wire::pmi2_frame_length_max) fail("pmi2_len", "length out of range", text);
  std::string again = std::to_string(length);
  again.resize(wire::pmi2_length_field_size, ' ');
  if (wire::pmi2_parse_length(again) != length) fail("pmi2_len", "no round trip", text);
}

void check_pmi2(std::string_view text) {
  wire::pmi_message_t message;
  try {
    message = wire::pmi2_parse(text);
  } catch (const std::runtime_error&) {
    return;
  }
  const std::string frame = wire::pmi2_format(message);
  const std::string_view body = std::string_view(frame).substr(wire::pmi2_length_field_size);
  if (wire::pmi2_parse_length(frame.substr(0, wire::pmi2_length_field_size)) != body.size()) {
    fail("pmi2", "wrong length field", text);
  }
  wire::pmi_message_t again;
  try {
    again = wire::pmi2_parse(body);
  } catch (const std::runtime_error&) {
    fail("pmi2", "the formatted frame does not parse", text);
  }
  if (!same(again, message)) fail("pmi2", "no round trip", text);
}

void check_lines(std::string_view text, std::size_t line_length_max) {
  if (text.size() > lines_bytes_max) text = text.substr(0, lines_bytes_max);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  // Fits the pipe (lines_bytes_max): written at once, no reader needed.
  if (!text.empty() && ::write(fds[1], text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    std::abort();
  }
  ::close(fds[1]);
  wire::fd_channel_t channel(fds[0], "the fuzzer's pipe");
  std::string consumed;
  try {
    for (;;) {
      const std::string line = channel.read_line(line_length_max);
      if (line.find('\n') != std::string::npos) fail("lines", "a line holds '\\n'", text);
      if (line.size() > line_length_max) fail("lines", "a line over line_length_max", text);
      consumed += line;
      consumed += '\n';
      if (consumed.size() > text.size()) fail("lines", "more lines than bytes", text);
    }
  } catch (const std::runtime_error&) {
    // The peer closed, or a line is too long: the end of this stream.
  }
  if (text.substr(0, consumed.size()) != consumed) fail("lines", "lines are not the stream", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 6) {
    case 0:
      check_hex(text);
      break;
    case 1:
      check_kvs(text, wire::kvs_value_length_min + data[1] % 64);
      break;
    case 2:
      check_pmi1(text);
      break;
    case 3:
      check_pmi2_length(text);
      break;
    case 4:
      check_pmi2(text);
      break;
    default:
      check_lines(text, 1 + data[1] % 64);
      break;
  }
  return 0;
}
