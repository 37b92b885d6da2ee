// Stands in for models_test where libtorch was not found: the suite then reports the model
// tests as skipped, with the reason, rather than leaving them out unsaid.
#include <gtest/gtest.h>

TEST(Models, NeedTheModelPlugin) {
  GTEST_SKIP() << "libtorch was not found when this build was configured, so the model plugin "
                  "(libpaam_torch.so) and its tests were not built: apt-get install libtorch-dev "
                  "and configure again (docs/models.md)";
}
