// shm_queue_model_test with every context bound one higher (tagged
// manual): `bazel test //tests/backends/shm:shm_queue_model_deep_test`.
#define LCI_SHM_QUEUE_MODEL_DEEP 1
#include "tests/backends/shm/shm_queue_model_test.cpp"
