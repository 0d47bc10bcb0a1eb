// LCT_args_parser_* and LCT_str_int_search: options in every accepted form
// land in their ints, dict options by name; misuse is fatal.
#include <getopt.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lct.h"

namespace {

// argv from strings (the parser takes char**, as main's).
struct argv_t {
  explicit argv_t(std::vector<std::string> args) : storage(std::move(args)) {
    for (std::string& arg : storage) pointers.push_back(&arg[0]);
  }
  int argc() const { return static_cast<int>(pointers.size()); }
  char** argv() { return pointers.data(); }
  std::vector<std::string> storage;
  std::vector<char*> pointers;
};

TEST(LctStrIntSearch, FoundNullKeyAndMissing) {
  LCT_dict_str_int_t dict[] = {{nullptr, 0}, {"lcrq", 8}, {"ms", 7}};
  int value = -1;
  EXPECT_TRUE(LCT_str_int_search(dict, 3, "LCRQ", 5, &value));
  EXPECT_EQ(value, dict[1].val);
  EXPECT_TRUE(LCT_str_int_search(dict, 3, nullptr, 5, &value));
  EXPECT_EQ(value, 5);
  value = -1;
  EXPECT_FALSE(LCT_str_int_search(dict, 3, "lprq", 5, &value));
  EXPECT_EQ(value, 5);
}

TEST(LctArgsParser, EveryForm) {
  int threads = -1, size = -1, verbose = 0, op = -1, untouched = 42;
  LCT_dict_str_int_t ops[] = {{"send", 10}, {"put", 20}};
  LCT_args_parser_t parser = LCT_args_parser_alloc();
  LCT_args_parser_add(parser, "nthreads", required_argument, &threads);
  LCT_args_parser_add(parser, "min-size", required_argument, &size);
  LCT_args_parser_add(parser, "verbose", no_argument, &verbose);
  LCT_args_parser_add(parser, "untouched", required_argument, &untouched);
  LCT_args_parser_add_dict(parser, "op", required_argument, &op, ops, 2);
  argv_t args({"prog", "--nthreads", "4", "positional", "--min-size=-8", "--verbose",
               "--op", "put"});
  LCT_args_parser_parse(parser, args.argc(), args.argv());
  EXPECT_EQ(threads, 4);
  EXPECT_EQ(size, -8);
  EXPECT_EQ(verbose, 1);
  EXPECT_EQ(op, ops[1].val);
  EXPECT_EQ(untouched, 42);
  testing::internal::CaptureStdout();
  LCT_args_parser_print(parser, true);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_NE(printed.find("nthreads = 4\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("op = put (one of: send put)\n"), std::string::npos) << printed;
  LCT_args_parser_free(parser);
}

void parse_one(std::vector<std::string> arguments) {
  int value = 0;
  LCT_dict_str_int_t modes[] = {{"a", 1}};
  LCT_args_parser_t parser = LCT_args_parser_alloc();
  LCT_args_parser_add(parser, "n", required_argument, &value);
  LCT_args_parser_add_dict(parser, "mode", required_argument, &value, modes, 1);
  argv_t args(std::move(arguments));
  LCT_args_parser_parse(parser, args.argc(), args.argv());
  LCT_args_parser_free(parser);
}

TEST(LctArgsParserDeath, MisuseIsFatal) {
  EXPECT_DEATH(parse_one({"prog", "--unknown", "1"}), "unknown option --unknown");
  EXPECT_DEATH(parse_one({"prog", "--n"}), "needs a value");
  EXPECT_DEATH(parse_one({"prog", "--n", "12x"}), "not an int");
  EXPECT_DEATH(parse_one({"prog", "--mode=b"}), "unknown value");
}

}  // namespace
