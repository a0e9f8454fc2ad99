// Shared main for every test executable: GoogleTest, with RapidCheck's
// properties registered as GoogleTest cases via rapidcheck/gtest.h.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
