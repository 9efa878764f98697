#pragma once

namespace hattn::testing {

// Registers one test per golden case (Golden.<group>_<case>, and GoldenOpenCL./GoldenCUDA. on those devices); call before RUN_ALL_TESTS.
void register_golden_cases();

}  // namespace hattn::testing
