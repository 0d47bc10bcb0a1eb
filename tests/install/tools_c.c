/* lct.h from a strict C99 program (liblct.pc): a queue round trip, a string
 * table and the clock. Prints "tools_c: ok" and exits 0, or exits 1. */
#include <stdio.h>

#include "lct.h"

int main(void) {
  int values[3] = {1, 2, 3};
  int i, found = -1, ok = 1;
  LCT_dict_str_int_t kinds[] = {{"lcrq", LCT_QUEUE_LCRQ}};
  LCT_time_t start = LCT_now();
  LCT_queue_t queue = LCT_queue_alloc(LCT_QUEUE_ARRAY_ATOMIC_FAA, 3);
  for (i = 0; i < 3; ++i) LCT_queue_push(queue, &values[i]);
  for (i = 0; i < 3; ++i) ok = ok && LCT_queue_pop(queue) == &values[i];
  ok = ok && LCT_queue_pop(queue) == NULL;
  LCT_queue_free(&queue);
  ok = ok && LCT_str_int_search(kinds, 1, "LCRQ", -1, &found) && found == LCT_QUEUE_LCRQ;
  ok = ok && LCT_now() >= start;
  if (!ok) return 1;
  printf("tools_c: ok\n");
  return 0;
}
