// The argument parser (lct.h, "Argument parser").
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lct/lct.h"
#include "lct/lct_internal.hpp"

namespace {

// getopt's has_arg values (<getopt.h>), which clients pass.
constexpr int no_argument_value = 0;
constexpr int optional_argument_value = 2;

struct option_t {
  std::string name;
  int has_arg;
  int* ptr;
  std::vector<LCT_dict_str_int_t> dict;  // empty: a decimal value
  std::vector<std::string> dict_keys;    // the storage dict's keys point to
};

struct parser_t {
  std::vector<option_t> options;
};

option_t* find(parser_t& parser, const std::string& name) {
  for (option_t& option : parser.options)
    if (option.name == name) return &option;
  return nullptr;
}

void store(const option_t& option, const char* value) {
  if (!option.dict.empty()) {
    int result = 0;
    auto* dict = const_cast<LCT_dict_str_int_t*>(option.dict.data());
    if (!LCT_str_int_search(dict, static_cast<int>(option.dict.size()), value, 0, &result))
      lct::fatal("LCT_args_parser_parse", "--%s: unknown value \"%s\"",
                 option.name.c_str(), value);
    *option.ptr = result;
    return;
  }
  char* end = nullptr;
  errno = 0;
  const long number = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || number < INT_MIN || number > INT_MAX)
    lct::fatal("LCT_args_parser_parse", "--%s: \"%s\" is not an int",
               option.name.c_str(), value);
  *option.ptr = static_cast<int>(number);
}

}  // namespace

LCT_args_parser_t LCT_args_parser_alloc(void) { return new parser_t; }

void LCT_args_parser_free(LCT_args_parser_t parser) {
  delete static_cast<parser_t*>(parser);
}

void LCT_args_parser_add(LCT_args_parser_t parser, const char* name, int has_arg,
                         int* ptr) {
  LCT_args_parser_add_dict(parser, name, has_arg, ptr, nullptr, 0);
}

void LCT_args_parser_add_dict(LCT_args_parser_t parser, const char* name,
                              int has_arg, int* ptr, LCT_dict_str_int_t dict[],
                              int count) {
  auto& self = *static_cast<parser_t*>(parser);
  if (find(self, name) != nullptr)
    lct::fatal("LCT_args_parser_add", "--%s added twice", name);
  option_t option{name, has_arg, ptr, {}, {}};
  for (int i = 0; i < count; ++i) {
    if (dict[i].key == nullptr) continue;
    option.dict_keys.emplace_back(dict[i].key);
    option.dict.push_back({nullptr, dict[i].val});
  }
  for (std::size_t i = 0; i < option.dict.size(); ++i)
    option.dict[i].key = option.dict_keys[i].c_str();
  self.options.push_back(std::move(option));
}

void LCT_args_parser_parse(LCT_args_parser_t parser, int argc, char* argv[]) {
  auto& self = *static_cast<parser_t*>(parser);
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strncmp(arg, "--", 2) != 0) continue;  // not an option of ours
    const char* equals = std::strchr(arg, '=');
    const std::string name = equals != nullptr ? std::string(arg + 2, equals)
                                               : std::string(arg + 2);
    option_t* option = find(self, name);
    if (option == nullptr)
      lct::fatal("LCT_args_parser_parse", "unknown option %s", arg);
    if (option->has_arg == no_argument_value) {
      if (equals != nullptr)
        lct::fatal("LCT_args_parser_parse", "--%s takes no value", name.c_str());
      *option->ptr = 1;
    } else if (equals != nullptr) {
      store(*option, equals + 1);
    } else if (option->has_arg == optional_argument_value) {
      *option->ptr = 1;
    } else {
      if (i + 1 >= argc)
        lct::fatal("LCT_args_parser_parse", "--%s needs a value", name.c_str());
      store(*option, argv[++i]);
    }
  }
}

void LCT_args_parser_print(LCT_args_parser_t parser, bool verbose) {
  const auto& self = *static_cast<const parser_t*>(parser);
  for (const option_t& option : self.options) {
    const char* value_name = nullptr;
    for (const LCT_dict_str_int_t& entry : option.dict)
      if (entry.val == *option.ptr && value_name == nullptr) value_name = entry.key;
    if (value_name != nullptr)
      std::printf("%s = %s", option.name.c_str(), value_name);
    else
      std::printf("%s = %d", option.name.c_str(), *option.ptr);
    if (verbose && !option.dict.empty()) {
      std::printf(" (one of:");
      for (const LCT_dict_str_int_t& entry : option.dict) std::printf(" %s", entry.key);
      std::printf(")");
    }
    std::printf("\n");
  }
}
