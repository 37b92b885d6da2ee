// Stands in for models_test where the model plugin is not built: the suite then reports the
// model tests as skipped, with the reason (PAAM_MODELS_SKIPPED, from core/src/models/CMakeLists.txt),
// rather than leaving them out unsaid.
#include <gtest/gtest.h>

TEST(Models, NeedTheModelPlugin) {
  GTEST_SKIP() << "the model plugin (libpaam_torch.so) and its tests were not built: " PAAM_MODELS_SKIPPED
                  " (docs/models.md)";
}
