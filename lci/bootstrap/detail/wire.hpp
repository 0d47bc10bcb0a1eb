// The text protocols' shared pieces: hex encoding of binary values, values
// split over several PMI keys, PMI-1 lines and PMI-2 frames, and a blocking
// socket channel. Used by the pmi1, pmi2 and lcirun backends; the formats are
// described in docs/bootstrap.md.
//
// Thread safety: the functions are pure; one fd_channel_t is used by one
//                thread at a time.
// Blocking:      only fd_channel_t's reads and writes (until the peer
//                answers or closes).
// Ownership:     fd_channel_t owns its descriptor and closes it.
// Allocation:    the returned strings and vectors; fd_channel_t's buffer.
// Limits:        PMI-2 frames hold at most pmi2_frame_length_max characters;
//                lines at most the line_length_max the caller passes. Every
//                malformed input throws std::runtime_error naming what was
//                expected and quoting what arrived.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lci::bootstrap::detail {

// ---- binary values as text ----

// Two lowercase hex digits per byte.
std::string hex_encode(const void* data, std::size_t size_bytes);
// Accepts either case; throws on an odd length or a non-hex character.
std::vector<std::byte> hex_decode(std::string_view text);

// ---- values split over PMI keys ----
//
// PMI servers keep at most a fixed number of characters per key and value
// (hydra: keys of 63, values of 1023, silently truncating longer ones), and
// their key-value space is shared by all ranks. A value therefore becomes the
// text "<size_bytes>.<hex>", cut into chunks of at most value_length_max
// characters, chunk i stored under kvs_key(key, rank, i).

// Smallest limits a server may impose; below them the server is refused.
inline constexpr std::size_t kvs_key_length_min = 32;
inline constexpr std::size_t kvs_value_length_min = 32;

// "<key>-<rank>-<chunk_index>" when that fits key_length_max, else
// ".<16 hex digits of the key's 64-bit FNV-1a hash>-<rank>-<chunk_index>".
// Plain keys never contain '-' or start with '.', so distinct (key, rank,
// chunk) triples give distinct names unless two long keys share a hash.
std::string kvs_key(const std::string& key, int rank, std::size_t chunk_index,
                    std::size_t key_length_max);

std::vector<std::string> kvs_value_chunks(const void* value,
                                          std::size_t size_bytes,
                                          std::size_t value_length_max);
// How many chunks the value whose first chunk is given has.
std::size_t kvs_chunk_count(std::string_view first_chunk,
                            std::size_t value_length_max);
std::vector<std::byte> kvs_value_join(const std::vector<std::string>& chunks);

// ---- PMI-1 lines and PMI-2 frames ----

// One message: its command and its other fields in wire order.
struct pmi_message_t {
  std::string cmd;
  std::vector<std::pair<std::string, std::string>> fields;

  // nullptr when absent
  const std::string* find(std::string_view key) const;
  // throw std::runtime_error naming the field and the command when it is
  // absent or (get_int) not a decimal integer
  const std::string& get(std::string_view key) const;
  int get_int(std::string_view key) const;
};

// Throws std::runtime_error unless message.cmd == expected_cmd and its rc
// field, when present, is 0; the error quotes the server's msg/errmsg.
void pmi_check_response(const pmi_message_t& message,
                        std::string_view expected_cmd);

// "cmd=<cmd> k=v ...\n". Values must not contain ' ', '=' or '\n' (PMI-1 has
// no escaping); throws std::invalid_argument if one does.
std::string pmi1_format(const pmi_message_t& message);
// One line without its '\n': space-separated key=value tokens, cmd first.
pmi_message_t pmi1_parse(std::string_view line);

inline constexpr std::size_t pmi2_length_field_size = 6;
inline constexpr std::size_t pmi2_frame_length_max = 64 * 1024;
// A 6-character decimal length, then "cmd=<cmd>;k=v;..." with each ';'
// inside a value doubled.
std::string pmi2_format(const pmi_message_t& message);
// The length field: digits, padded with spaces on either side.
std::size_t pmi2_parse_length(std::string_view length_field);
// The frame body after the length field.
pmi_message_t pmi2_parse(std::string_view body);

// ---- a blocking byte channel over a socket ----

class fd_channel_t {
 public:
  // Takes ownership of fd; peer_name names the other side in errors.
  fd_channel_t(int fd, std::string peer_name);
  ~fd_channel_t();
  fd_channel_t(const fd_channel_t&) = delete;
  fd_channel_t& operator=(const fd_channel_t&) = delete;

  void write_all(std::string_view bytes);
  // Up to '\n' (not included); throws if the peer closes first or the line
  // exceeds line_length_max.
  std::string read_line(std::size_t line_length_max);
  std::string read_exact(std::size_t size_bytes);
  const std::string& peer_name() const { return peer_name_; }

 private:
  void fill();  // appends what the socket has (at least one byte) to buffer_

  int fd_;
  std::string peer_name_;
  std::string buffer_;  // received, not yet consumed
};

}  // namespace lci::bootstrap::detail
