// The text protocols' encodings (lci/bootstrap/detail/wire.hpp): hex,
// values split over PMI keys, PMI-1 lines, PMI-2 frames, response checks,
// and the byte channel's line limit.
#include "lci/bootstrap/detail/wire.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"

namespace {

using namespace lci::bootstrap::detail;
using lci::bootstrap::value_size_bytes_max;

std::vector<std::byte> bytes_of(std::initializer_list<int> values) {
  std::vector<std::byte> bytes;
  for (int value : values) bytes.push_back(static_cast<std::byte>(value));
  return bytes;
}

// Runs body, which must throw std::runtime_error with `part` in its text.
template <typename body_t>
void expect_error(body_t body, const std::string& part) {
  try {
    body();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
        << "error text: " << error.what() << "\nexpected to contain: " << part;
    return;
  }
  ADD_FAILURE() << "no std::runtime_error containing: " << part;
}

TEST(Hex, EncodesEveryByteAsTwoLowercaseDigits) {
  const auto bytes = bytes_of({0x00, 0x0f, 0xa0, 0xff});
  EXPECT_EQ(hex_encode(bytes.data(), bytes.size()), "000fa0ff");
  EXPECT_EQ(hex_encode(nullptr, 0), "");
}

TEST(Hex, RoundTripsAllByteValues) {
  std::vector<std::byte> bytes(256);
  for (int i = 0; i < 256; ++i) bytes[i] = static_cast<std::byte>(i);
  const std::string text = hex_encode(bytes.data(), bytes.size());
  EXPECT_EQ(text.size(), 512u);
  EXPECT_EQ(hex_decode(text), bytes);
}

TEST(Hex, DecodesUppercase) {
  EXPECT_EQ(hex_decode("ABcd"), bytes_of({0xab, 0xcd}));
}

TEST(Hex, RefusesMalformedText) {
  expect_error([] { hex_decode("abc"); }, "odd length 3");
  expect_error([] { hex_decode("0g"); }, "non-hex character at offset 1");
  expect_error([] { hex_decode("a b "); }, "offset 1");
}

TEST(KvsKey, NamesKeyRankAndChunk) {
  EXPECT_EQ(kvs_key("addr", 3, 0, 63), "addr-3-0");
  EXPECT_EQ(kvs_key("addr", 12, 2, 63), "addr-12-2");
}

TEST(KvsKey, HashesKeysThatDoNotFit) {
  const std::string long_key(64, 'k');
  const std::string name = kvs_key(long_key, 7, 1, 63);
  EXPECT_LE(name.size(), 63u);
  EXPECT_EQ(name.front(), '.');
  EXPECT_EQ(name.size(), 1 + 16 + std::string("-7-1").size());
  EXPECT_EQ(name.substr(name.size() - 4), "-7-1");
  // Deterministic, and distinct for keys, ranks and chunks that differ.
  EXPECT_EQ(name, kvs_key(long_key, 7, 1, 63));
  EXPECT_NE(name, kvs_key(long_key, 7, 2, 63));
  EXPECT_NE(name, kvs_key(long_key, 8, 1, 63));
  EXPECT_NE(name, kvs_key(std::string(63, 'k') + "j", 7, 1, 63));
}

TEST(KvsKey, HashesAtTheLimitExactly) {
  // "a...a-1-0": 59 + 4 characters fit 63; one more does not.
  EXPECT_EQ(kvs_key(std::string(59, 'a'), 1, 0, 63),
            std::string(59, 'a') + "-1-0");
  EXPECT_EQ(kvs_key(std::string(60, 'a'), 1, 0, 63).front(), '.');
}

// The smallest key limit a server may have (kvs_key_length_min) is enough,
// for plain keys and for the longest hashed one (largest rank, the 65th
// chunk of the largest value).
TEST(KvsKey, WorksAtTheMinimumLimit) {
  EXPECT_EQ(kvs_key("addr", 0, 0, kvs_key_length_min), "addr-0-0");
  const std::string name =
      kvs_key(std::string(64, 'k'), 2147483647, 64, kvs_key_length_min);
  EXPECT_EQ(name, kvs_key(std::string(64, 'k'), 2147483647, 64, 63));
  EXPECT_EQ(name.size(), 1 + 16 + std::string("-2147483647-64").size());
  EXPECT_LE(name.size(), kvs_key_length_min);
}

TEST(KvsValue, OneChunkCarriesSizeAndHex) {
  const auto bytes = bytes_of({0x00, 0xff, 0x10});
  const auto chunks = kvs_value_chunks(bytes.data(), bytes.size(), 63);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0], "3.00ff10");
  EXPECT_EQ(kvs_chunk_count(chunks[0], 63), 1u);
  EXPECT_EQ(kvs_value_join(chunks), bytes);
}

TEST(KvsValue, EmptyValueIsOneChunk) {
  const auto chunks = kvs_value_chunks(nullptr, 0, 63);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0], "0.");
  EXPECT_TRUE(kvs_value_join(chunks).empty());
}

TEST(KvsValue, SplitsAndJoinsEverySizeAtSmallLimits) {
  for (const std::size_t limit : {32u, 33u, 63u, 1023u}) {
    for (std::size_t size = 0; size <= value_size_bytes_max; size += 37) {
      std::vector<std::byte> value(size);
      for (std::size_t i = 0; i < size; ++i) {
        value[i] = static_cast<std::byte>(i * 13 + size);
      }
      const auto chunks = kvs_value_chunks(value.data(), size, limit);
      for (const std::string& chunk : chunks) ASSERT_LE(chunk.size(), limit);
      ASSERT_EQ(kvs_chunk_count(chunks[0], limit), chunks.size())
          << "size " << size << " limit " << limit;
      ASSERT_EQ(kvs_value_join(chunks), value)
          << "size " << size << " limit " << limit;
    }
  }
}

TEST(KvsValue, LargestValueAtHydraLimitsTakesThreeChunks) {
  const std::vector<std::byte> value(value_size_bytes_max, std::byte{0x5a});
  const auto chunks = kvs_value_chunks(value.data(), value.size(), 1023);
  // "1024." + 2048 hex digits = 2053 characters.
  EXPECT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[2].size(), 2053u - 2 * 1023u);
}

TEST(KvsValue, RefusesCorruptChunks) {
  expect_error([] { kvs_chunk_count("garbage", 63); }, "corrupt");
  expect_error([] { kvs_chunk_count("9999.ab", 63); }, "size 9999");
  // The first chunk's length must match the size it announces.
  expect_error([] { kvs_chunk_count("2.abc", 63); }, "expected 6");
  expect_error([] { kvs_value_join({"3.00ff"}); }, "4 hex digits for 3 bytes");
  expect_error([] { kvs_value_join({"1.zz"}); }, "non-hex");
}

TEST(Pmi1, FormatsOneLine) {
  EXPECT_EQ(
      pmi1_format(
          {"put", {{"kvsname", "kvs_1"}, {"key", "a-0-0"}, {"value", "1.ff"}}}),
      "cmd=put kvsname=kvs_1 key=a-0-0 value=1.ff\n");
  EXPECT_EQ(pmi1_format({"barrier_in", {}}), "cmd=barrier_in\n");
}

TEST(Pmi1, RefusesTextItCannotCarry) {
  EXPECT_THROW(pmi1_format({"put", {{"value", "a b"}}}), std::invalid_argument);
  EXPECT_THROW(pmi1_format({"put", {{"value", "a=b"}}}), std::invalid_argument);
  EXPECT_THROW(pmi1_format({"put", {{"va lue", "x"}}}), std::invalid_argument);
  EXPECT_THROW(pmi1_format({"put", {{"value", "a\n"}}}), std::invalid_argument);
}

TEST(Pmi1, ParsesAResponse) {
  const pmi_message_t message =
      pmi1_parse("cmd=get_result rc=0 msg=success value=3.a=b");
  EXPECT_EQ(message.cmd, "get_result");
  ASSERT_EQ(message.fields.size(), 3u);
  EXPECT_EQ(message.get("msg"), "success");
  EXPECT_EQ(message.get("value"), "3.a=b");  // split at the first '='
  EXPECT_EQ(message.get_int("rc"), 0);
  EXPECT_EQ(message.find("missing"), nullptr);
}

TEST(Pmi1, ToleratesRepeatedAndTrailingSpaces) {
  const pmi_message_t message = pmi1_parse("cmd=maxes  keylen_max=64 ");
  EXPECT_EQ(message.cmd, "maxes");
  EXPECT_EQ(message.get_int("keylen_max"), 64);
}

TEST(Pmi1, RefusesMalformedResponses) {
  expect_error([] { pmi1_parse(""); }, "empty PMI-1 response");
  expect_error([] { pmi1_parse("garbage"); },
               "token 'garbage' is not key=value");
  expect_error([] { pmi1_parse("rc=0 cmd=x"); }, "does not start with cmd=");
  expect_error([] { pmi1_parse("cmd= rc=0"); }, "does not start with cmd=");
  expect_error([] { pmi1_parse("cmd=x =y"); }, "not key=value");
}

TEST(PmiMessage, FieldErrorsNameFieldAndCommand) {
  const pmi_message_t message = pmi1_parse("cmd=maxes keylen_max=lots");
  expect_error([&] { message.get("vallen_max"); },
               "lacks field 'vallen_max': 'cmd=maxes keylen_max=lots'");
  expect_error([&] { message.get_int("keylen_max"); },
               "'keylen_max' is not an integer");
}

TEST(PmiMessage, CheckResponseNamesWhatWentWrong) {
  EXPECT_NO_THROW(
      pmi_check_response(pmi1_parse("cmd=put_result rc=0"), "put_result"));
  EXPECT_NO_THROW(
      pmi_check_response(pmi1_parse("cmd=barrier_out"), "barrier_out"));
  expect_error(
      [] { pmi_check_response(pmi1_parse("cmd=maxes"), "my_kvsname"); },
      "expected cmd=my_kvsname from the PMI server, got 'cmd=maxes'");
  expect_error(
      [] {
        pmi_check_response(pmi1_parse("cmd=put_result rc=-1 msg=full"),
                           "put_result");
      },
      "answered put_result with rc=-1: full");
  expect_error(
      [] {
        pmi_check_response(pmi2_parse("cmd=kvs-put-response;rc=2;errmsg=no;"),
                           "kvs-put-response");
      },
      "rc=2: no");
}

TEST(Pmi2, FormatsAFrameWithItsLength) {
  const std::string frame =
      pmi2_format({"fullinit", {{"pmirank", "1"}, {"threaded", "FALSE"}}});
  const std::string body = "cmd=fullinit;pmirank=1;threaded=FALSE;";
  EXPECT_EQ(frame, std::to_string(body.size()) + "    " + body);
  EXPECT_EQ(pmi2_parse_length(frame.substr(0, pmi2_length_field_size)),
            body.size());
}

TEST(Pmi2, DoublesSemicolonsInValues) {
  const std::string frame = pmi2_format({"kvs-put", {{"value", "a;b;;"}}});
  const std::string body = frame.substr(pmi2_length_field_size);
  EXPECT_EQ(body, "cmd=kvs-put;value=a;;b;;;;;");
  EXPECT_EQ(pmi2_parse(body).get("value"), "a;b;;");
}

TEST(Pmi2, RefusesKeysItCannotCarry) {
  EXPECT_THROW(pmi2_format({"kvs-put", {{"k;ey", "v"}}}),
               std::invalid_argument);
  EXPECT_THROW(pmi2_format({"kvs-put", {{"", "v"}}}), std::invalid_argument);
  EXPECT_THROW(pmi2_format({"kvs-put", {{"value", std::string(70000, 'x')}}}),
               std::invalid_argument);
}

// A frame of exactly pmi2_frame_length_max characters is within the limit.
TEST(Pmi2, FormatsAFrameOfTheLargestLength) {
  const std::string head = "cmd=kvs-put;value=";  // then the value and ';'
  const std::string value(pmi2_frame_length_max - head.size() - 1, 'v');
  const std::string frame = pmi2_format({"kvs-put", {{"value", value}}});
  EXPECT_EQ(frame.size(), pmi2_length_field_size + pmi2_frame_length_max);
  EXPECT_EQ(pmi2_parse_length(frame.substr(0, pmi2_length_field_size)),
            pmi2_frame_length_max);
  EXPECT_THROW(pmi2_format({"kvs-put", {{"value", value + "v"}}}),
               std::invalid_argument);
}

// The parser reads only the frame it is given: here each frame is a view
// into a longer text whose next character is a ';'.
TEST(Pmi2, ParsesNothingPastTheFrame) {
  const auto all_but_last = [](const std::string& text) {
    return std::string_view(text).substr(0, text.size() - 1);
  };
  // The field is not terminated inside the frame: an error, whatever follows.
  const std::string unterminated = "cmd=kvs-get;key=v;";
  expect_error([&] { pmi2_parse(all_but_last(unterminated)); }, "not terminated");
  // The frame's last ';' ends the field; the ';' after the frame does not
  // make it an escaped ';'.
  const std::string terminated = "cmd=kvs-get;key=v;;";
  EXPECT_EQ(pmi2_parse(all_but_last(terminated)).get("key"), "v");
}

TEST(Pmi2, ParsesLengthsPaddedEitherWay) {
  EXPECT_EQ(pmi2_parse_length("113   "), 113u);
  EXPECT_EQ(pmi2_parse_length("   113"), 113u);  // as hydra sends it
  EXPECT_EQ(pmi2_parse_length("65536 "), 65536u);
  expect_error([] { pmi2_parse_length("      "); }, "malformed PMI-2 length");
  expect_error([] { pmi2_parse_length("1 2   "); }, "malformed PMI-2 length");
  expect_error([] { pmi2_parse_length("-5    "); }, "malformed PMI-2 length");
  expect_error([] { pmi2_parse_length("0     "); }, "outside 1..65536");
  expect_error([] { pmi2_parse_length("99999 "); }, "outside 1..65536");
}

TEST(Pmi2, ParsesAResponse) {
  const pmi_message_t message =
      pmi2_parse("cmd=kvs-get-response;found=TRUE;value=2.abcd;rc=0;");
  EXPECT_EQ(message.cmd, "kvs-get-response");
  EXPECT_EQ(message.get("found"), "TRUE");
  EXPECT_EQ(message.get("value"), "2.abcd");
  EXPECT_EQ(message.get_int("rc"), 0);
}

TEST(Pmi2, KeepsEmptyValues) {
  const pmi_message_t message = pmi2_parse("cmd=x;value=;rc=0;");
  EXPECT_EQ(message.get("value"), "");
}

TEST(Pmi2, RefusesMalformedFrames) {
  expect_error([] { pmi2_parse(""); }, "empty PMI-2 frame");
  expect_error([] { pmi2_parse("cmd=x"); }, "not terminated by ';'");
  expect_error([] { pmi2_parse("cmd=x;rc=0;;"); }, "not terminated by ';'");
  expect_error([] { pmi2_parse("cmd=x;rc0;"); }, "expected key= at 6");
  expect_error([] { pmi2_parse("cmd=x;=0;"); }, "expected key= at 6");
  expect_error([] { pmi2_parse("rc=0;cmd=x;"); }, "does not start with cmd=");
}

TEST(Errors, QuoteControlBytesAndTruncate) {
  expect_error([] { pmi1_parse(std::string("\x01junk", 5)); }, "'\\x01junk'");
  expect_error([] { pmi1_parse(std::string(200, 'z')); }, "'...");
}

// Quotes keep at most 80 characters: 80 are quoted whole, 81 lose the last
// one and are marked "...".
TEST(Errors, QuotesTruncateAfterEightyCharacters) {
  const auto text_of_error = [](std::size_t length) -> std::string {
    try {
      pmi1_parse(std::string(length, 'z'));
    } catch (const std::runtime_error& error) {
      return error.what();
    }
    ADD_FAILURE() << "no error for " << length << " characters";
    return "";
  };
  const auto ends_with = [](const std::string& text, const std::string& end) {
    return text.size() >= end.size() &&
           text.compare(text.size() - end.size(), end.size(), end) == 0;
  };
  const std::string quoted = "'" + std::string(80, 'z') + "'";
  const std::string at_limit = text_of_error(80);
  EXPECT_TRUE(ends_with(at_limit, quoted)) << at_limit;
  const std::string past_limit = text_of_error(81);
  EXPECT_TRUE(ends_with(past_limit, quoted + "...")) << past_limit;
}

// A line of exactly line_length_max characters is read, even when it
// arrives in two reads: here the channel reads 4096 bytes at a time, so the
// first read ends just before the newline.
TEST(FdChannel, ReadsALineOfTheLargestLength) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  constexpr std::size_t line_length_max = 4096;
  const std::string line(line_length_max, 'x');
  fd_channel_t writer(fds[0], "writer");
  fd_channel_t reader(fds[1], "reader");
  writer.write_all(line + "\n" + line + "x\n");
  EXPECT_EQ(reader.read_line(line_length_max), line);
  expect_error([&] { reader.read_line(line_length_max); },
               "exceeds 4096 characters");
}

}  // namespace
