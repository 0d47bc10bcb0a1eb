// LCT_str_int_search: the string tables clients read environment variables
// and options through.
#include <strings.h>

#include "lct/lct.h"

int LCT_str_int_search(LCT_dict_str_int_t dict[], int count, const char* key,
                       int default_val, int* val) {
  *val = default_val;
  if (key == nullptr) return 1;
  for (int i = 0; i < count; ++i) {
    if (dict[i].key != nullptr && strcasecmp(dict[i].key, key) == 0) {
      *val = dict[i].val;
      return 1;
    }
  }
  return 0;
}
