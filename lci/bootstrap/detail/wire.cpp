#include "lci/bootstrap/detail/wire.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <stdexcept>
#include <system_error>

#include "lci/bootstrap/bootstrap.hpp"
#include "lci/util/assert.hpp"

namespace lci::bootstrap::detail {

namespace {

// Quotes untrusted text for an error message: at most quote_length_max
// characters, control and non-ASCII bytes as \xNN.
std::string quote(std::string_view text) {
  constexpr std::size_t quote_length_max = 80;
  static const char digits[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < quote_length_max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 0xf];
    }
  }
  out += text.size() > quote_length_max ? "'..." : "'";
  return out;
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_decimal(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::uint64_t fnv1a_64(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

// The number of characters before '.' in a chunked value's text, and the
// value's size in bytes, from the text's start.
std::pair<std::size_t, std::size_t> parse_value_header(std::string_view text) {
  const std::size_t dot = text.find('.');
  // A size of at most value_size_bytes_max has at most 4 digits.
  if (dot == std::string_view::npos || dot > 4 ||
      !is_decimal(text.substr(0, dot))) {
    throw std::runtime_error("corrupt bootstrap value in the PMI key space: " +
                             quote(text));
  }
  const std::size_t size_bytes = std::stoul(std::string(text.substr(0, dot)));
  if (size_bytes > value_size_bytes_max) {
    throw std::runtime_error(
        "corrupt bootstrap value in the PMI key space "
        "(size " +
        std::to_string(size_bytes) + "): " + quote(text));
  }
  return {dot, size_bytes};
}

std::string render(const pmi_message_t& message) {
  std::string text = "cmd=" + message.cmd;
  for (const auto& [key, value] : message.fields) {
    text += " " + key + "=" + value;
  }
  return text;
}

[[noreturn]] void throw_errno(const std::string& what, int error) {
  throw std::system_error(error, std::generic_category(), what);
}

}  // namespace

// ---- binary values as text ----

std::string hex_encode(const void* data, std::size_t size_bytes) {
  static const char digits[] = "0123456789abcdef";
  LCI_ASSERT(data != nullptr || size_bytes == 0, "hex_encode of a null buffer");
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string text(2 * size_bytes, '0');
  for (std::size_t i = 0; i < size_bytes; ++i) {
    text[2 * i] = digits[bytes[i] >> 4];
    text[2 * i + 1] = digits[bytes[i] & 0xf];
  }
  return text;
}

std::vector<std::byte> hex_decode(std::string_view text) {
  if (text.size() % 2 != 0) {
    throw std::runtime_error("hex text of odd length " +
                             std::to_string(text.size()) + ": " + quote(text));
  }
  std::vector<std::byte> bytes(text.size() / 2);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const int high = hex_digit_value(text[2 * i]);
    const int low = hex_digit_value(text[2 * i + 1]);
    if (high < 0 || low < 0) {
      throw std::runtime_error("non-hex character at offset " +
                               std::to_string(high < 0 ? 2 * i : 2 * i + 1) +
                               " of " + quote(text));
    }
    bytes[i] = static_cast<std::byte>(high * 16 + low);
  }
  return bytes;
}

// ---- values split over PMI keys ----

std::string kvs_key(const std::string& key, int rank, std::size_t chunk_index,
                    std::size_t key_length_max) {
  LCI_ASSERT(key_length_max >= kvs_key_length_min, "key limit below minimum");
  LCI_ASSERT(rank >= 0, "negative rank");
  const std::string suffix =
      "-" + std::to_string(rank) + "-" + std::to_string(chunk_index);
  std::string plain = key + suffix;
  if (plain.size() <= key_length_max) return plain;
  // The hashed form has at most 1 + 16 + 1 + 10 + 1 + 2 characters (a
  // value of value_size_bytes_max needs at most 65 chunks of
  // kvs_value_length_min), which fits kvs_key_length_min.
  const std::uint64_t hash = fnv1a_64(key);
  unsigned char hash_bytes[8];
  for (int i = 0; i < 8; ++i) {
    hash_bytes[i] = static_cast<unsigned char>(hash >> (56 - 8 * i));
  }
  std::string hashed =
      "." + hex_encode(hash_bytes, sizeof(hash_bytes)) + suffix;
  // Equivalent mutants: bound. Strict already: the hashed form has at most 31 characters
  // (above) and key_length_max at least kvs_key_length_min, 32
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 12).
  LCI_ASSERT(hashed.size() <= key_length_max, "hashed PMI key too long");
  return hashed;
}

std::vector<std::string> kvs_value_chunks(const void* value,
                                          std::size_t size_bytes,
                                          std::size_t value_length_max) {
  LCI_ASSERT(value_length_max >= kvs_value_length_min,
             "value limit below minimum");
  LCI_ASSERT(size_bytes <= value_size_bytes_max, "value too large");
  const std::string text =
      std::to_string(size_bytes) + "." + hex_encode(value, size_bytes);
  std::vector<std::string> chunks;
  for (std::size_t offset = 0; offset < text.size();
       offset += value_length_max) {
    chunks.push_back(text.substr(offset, value_length_max));
  }
  LCI_DEBUG_ASSERT(
      kvs_chunk_count(chunks.front(), value_length_max) == chunks.size(),
      "chunk count disagrees with the header");
  return chunks;
}

std::size_t kvs_chunk_count(std::string_view first_chunk,
                            std::size_t value_length_max) {
  LCI_ASSERT(value_length_max >= kvs_value_length_min,
             "value limit below minimum");
  const auto [dot, size_bytes] = parse_value_header(first_chunk);
  const std::size_t text_length = dot + 1 + 2 * size_bytes;
  // Equivalent mutants: bound. At equality both arms are the same value
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 12).
  const std::size_t first_length =
      text_length < value_length_max ? text_length : value_length_max;
  if (first_chunk.size() != first_length) {
    throw std::runtime_error(
        "corrupt bootstrap value in the PMI key space: first chunk of " +
        std::to_string(first_chunk.size()) + " characters, expected " +
        std::to_string(first_length) + ": " + quote(first_chunk));
  }
  return (text_length + value_length_max - 1) / value_length_max;
}

std::vector<std::byte> kvs_value_join(const std::vector<std::string>& chunks) {
  LCI_ASSERT(!chunks.empty(), "no chunks to join");
  std::string text;
  for (const std::string& chunk : chunks) text += chunk;
  const auto [dot, size_bytes] = parse_value_header(text);
  if (text.size() != dot + 1 + 2 * size_bytes) {
    throw std::runtime_error("corrupt bootstrap value in the PMI key space: " +
                             std::to_string(text.size() - dot - 1) +
                             " hex digits for " + std::to_string(size_bytes) +
                             " bytes");
  }
  std::vector<std::byte> value =
      hex_decode(std::string_view(text).substr(dot + 1));
  LCI_ASSERT(value.size() == size_bytes, "decoded size mismatch");
  return value;
}

// ---- PMI-1 lines and PMI-2 frames ----

const std::string* pmi_message_t::find(std::string_view key) const {
  for (const auto& field : fields) {
    if (field.first == key) return &field.second;
  }
  return nullptr;
}

const std::string& pmi_message_t::get(std::string_view key) const {
  const std::string* value = find(key);
  if (value == nullptr) {
    throw std::runtime_error("PMI response lacks field '" + std::string(key) +
                             "': " + quote(render(*this)));
  }
  return *value;
}

int pmi_message_t::get_int(std::string_view key) const {
  const std::string& text = get(key);
  int value = 0;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw std::runtime_error("PMI response field '" + std::string(key) +
                             "' is not an integer: " + quote(render(*this)));
  }
  return value;
}

void pmi_check_response(const pmi_message_t& message,
                        std::string_view expected_cmd) {
  if (message.cmd != expected_cmd) {
    throw std::runtime_error("expected cmd=" + std::string(expected_cmd) +
                             " from the PMI server, got " +
                             quote(render(message)));
  }
  const std::string* rc = message.find("rc");
  if (rc != nullptr && *rc != "0") {
    const std::string* text = message.find("msg");
    if (text == nullptr) text = message.find("errmsg");
    throw std::runtime_error("PMI server answered " + message.cmd +
                             " with rc=" + *rc +
                             (text != nullptr ? ": " + *text : ""));
  }
}

std::string pmi1_format(const pmi_message_t& message) {
  const auto check = [](const std::string& text) {
    if (text.find_first_of(" =\n") != std::string::npos) {
      throw std::invalid_argument(
          "PMI-1 cannot carry ' ', '=' or a newline in " + quote(text));
    }
  };
  check(message.cmd);
  std::string line = "cmd=" + message.cmd;
  for (const auto& [key, value] : message.fields) {
    check(key);
    check(value);
    LCI_ASSERT(!key.empty(), "empty PMI-1 key");
    line += " " + key + "=" + value;
  }
  return line + "\n";
}

pmi_message_t pmi1_parse(std::string_view line) {
  pmi_message_t message;
  bool first = true;
  std::size_t position = 0;
  // Equivalent mutants: bound. A lap at position == line.size() finds the empty token
  // that repeated spaces also give, and skips it (tools/mutate_records/2026-11-27-runs-05-28.md,
  // run 12).
  while (position < line.size()) {
    std::size_t end = line.find(' ', position);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view token = line.substr(position, end - position);
    position = end + 1;
    if (token.empty()) continue;  // repeated or trailing spaces
    const std::size_t equals = token.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      throw std::runtime_error("malformed PMI-1 response (token " +
                               quote(token) +
                               " is not key=value): " + quote(line));
    }
    std::string key(token.substr(0, equals));
    std::string value(token.substr(equals + 1));
    if (first) {
      if (key != "cmd" || value.empty()) {
        throw std::runtime_error(
            "malformed PMI-1 response (does not start with cmd=): " +
            quote(line));
      }
      message.cmd = std::move(value);
      first = false;
    } else {
      message.fields.emplace_back(std::move(key), std::move(value));
    }
  }
  if (first) {
    throw std::runtime_error("empty PMI-1 response line");
  }
  return message;
}

std::string pmi2_format(const pmi_message_t& message) {
  const auto append_escaped = [](std::string& out, const std::string& text) {
    for (char c : text) {
      if (c == ';') out += ';';  // ';' inside a value is doubled
      out += c;
    }
  };
  // The command is a value like any other: pmi2_parse undoubles its ';'
  // too (fuzz/bootstrap_wire_fuzz.cpp found a command with ';' that did
  // not survive format then parse).
  std::string body = "cmd=";
  append_escaped(body, message.cmd);
  body += ";";
  for (const auto& [key, value] : message.fields) {
    if (key.empty() || key.find_first_of(";=") != std::string::npos) {
      throw std::invalid_argument("PMI-2 key " + quote(key) +
                                  " is empty or holds ';' or '='");
    }
    body += key + "=";
    append_escaped(body, value);
    body += ";";
  }
  if (body.size() > pmi2_frame_length_max) {
    throw std::invalid_argument("PMI-2 frame of " +
                                std::to_string(body.size()) +
                                " characters exceeds the protocol's limit");
  }
  std::string length = std::to_string(body.size());
  length.resize(pmi2_length_field_size, ' ');
  return length + body;
}

std::size_t pmi2_parse_length(std::string_view length_field) {
  LCI_ASSERT(length_field.size() == pmi2_length_field_size,
             "PMI-2 length field of the wrong size");
  const std::size_t first = length_field.find_first_not_of(' ');
  const std::size_t last = length_field.find_last_not_of(' ');
  const std::string_view digits =
      first == std::string_view::npos
          ? std::string_view()
          : length_field.substr(first, last - first + 1);
  if (!is_decimal(digits)) {
    throw std::runtime_error("malformed PMI-2 length field " +
                             quote(length_field));
  }
  const std::size_t length = std::stoul(std::string(digits));
  if (length == 0 || length > pmi2_frame_length_max) {
    throw std::runtime_error("PMI-2 frame length " + std::to_string(length) +
                             " outside 1.." +
                             std::to_string(pmi2_frame_length_max));
  }
  return length;
}

pmi_message_t pmi2_parse(std::string_view body) {
  pmi_message_t message;
  std::size_t position = 0;
  while (position < body.size()) {
    const std::size_t equals = body.find('=', position);
    if (equals == std::string_view::npos || equals == position ||
        body.substr(position, equals - position).find(';') !=
            std::string_view::npos) {
      throw std::runtime_error("malformed PMI-2 frame (expected key= at " +
                               std::to_string(position) + "): " + quote(body));
    }
    std::string key(body.substr(position, equals - position));
    std::string value;
    std::size_t cursor = equals + 1;
    bool terminated = false;
    while (cursor < body.size()) {
      if (body[cursor] == ';') {
        if (cursor + 1 < body.size() && body[cursor + 1] == ';') {
          value += ';';
          cursor += 2;
          continue;
        }
        terminated = true;
        ++cursor;
        break;
      }
      value += body[cursor++];
    }
    if (!terminated) {
      throw std::runtime_error(
          "malformed PMI-2 frame (field not terminated by ';'): " +
          quote(body));
    }
    position = cursor;
    if (message.cmd.empty()) {
      if (key != "cmd" || value.empty()) {
        throw std::runtime_error(
            "malformed PMI-2 frame (does not start with cmd=): " + quote(body));
      }
      message.cmd = std::move(value);
    } else {
      message.fields.emplace_back(std::move(key), std::move(value));
    }
  }
  if (message.cmd.empty()) {
    throw std::runtime_error("empty PMI-2 frame");
  }
  return message;
}

// ---- a blocking byte channel over a socket ----

fd_channel_t::fd_channel_t(int fd, std::string peer_name)
    : fd_(fd), peer_name_(std::move(peer_name)) {
  LCI_ASSERT(fd >= 0, "negative descriptor");
}

fd_channel_t::~fd_channel_t() { ::close(fd_); }

void fd_channel_t::write_all(std::string_view bytes) {
  std::size_t offset = 0;
  while (offset < bytes.size()) {
    // MSG_NOSIGNAL: a vanished peer is an exception here, not SIGPIPE.
    const ssize_t written =
        ::send(fd_, bytes.data() + offset, bytes.size() - offset, MSG_NOSIGNAL);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_errno("writing to " + peer_name_, errno);
    }
    offset += static_cast<std::size_t>(written);
  }
}

void fd_channel_t::fill() {
  char chunk[4096];
  for (;;) {
    const ssize_t received = ::read(fd_, chunk, sizeof(chunk));
    if (received > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(received));
      return;
    }
    if (received == 0) {
      throw std::runtime_error(peer_name_ + " closed the connection");
    }
    if (errno != EINTR) throw_errno("reading from " + peer_name_, errno);
  }
}

std::string fd_channel_t::read_line(std::size_t line_length_max) {
  for (;;) {
    const std::size_t newline = buffer_.find('\n');
    if (newline != std::string::npos && newline <= line_length_max) {
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    if (newline != std::string::npos || buffer_.size() > line_length_max) {
      throw std::runtime_error("line from " + peer_name_ + " exceeds " +
                               std::to_string(line_length_max) +
                               " characters: " + quote(buffer_));
    }
    fill();
  }
}

std::string fd_channel_t::read_exact(std::size_t size_bytes) {
  while (buffer_.size() < size_bytes) fill();
  std::string bytes = buffer_.substr(0, size_bytes);
  buffer_.erase(0, size_bytes);
  return bytes;
}

}  // namespace lci::bootstrap::detail
