// lcrq_model_test with every context bound one higher (about 1-2 minutes;
// tagged manual): `bazel test //tests/cq:lcrq_model_deep_test`.
#define LCI_CQ_MODEL_DEEP 1
#include "tests/cq/lcrq_model_test.cpp"
