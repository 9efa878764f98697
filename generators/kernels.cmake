# Every kernel, once. hattn_kernel() expands each into its per-target variants.
hattn_kernel(projection)
