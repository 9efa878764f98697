# Every kernel, once. hattn_kernel() expands each into its per-target variants.
hattn_kernel(projection)
hattn_kernel(projection_gemv GENERATOR projection PARAMS gemv=true)
hattn_kernel(rope)
hattn_kernel(attention_prefill)
hattn_kernel(attention_prefill_masked GENERATOR attention_prefill PARAMS masked=true)
hattn_kernel(attention_decode)
hattn_kernel(cca_qk_latent)
