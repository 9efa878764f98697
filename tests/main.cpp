// The test suite's entry point: GoogleTest's, plus the golden cases discovered at start-up.
#include <gtest/gtest.h>

#include "golden_test.h"

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    hattn::testing::register_golden_cases();
    return RUN_ALL_TESTS();
}
