#!/bin/bash
set -u
source .gpu-pack/common.sh
f=()
for a in hillis_steele hillis_steele_global blelloch_padded decoupled_lookback reduce_then_scan; do
  for t in i32_sum u64_xor u32_custom_affine; do f+=("$a::$t"); done
done
race scan_gpu2 '^scan_gpu$' "${f[@]}" block_size_sweep inclusive_and_exclusive_shorthands repeatable_results sanitizer_cases sub_views_at_odd_offsets
finish
