#!/bin/bash
set -u
source .gpu-pack/common.sh
# initcheck: does the pool trim trigger the uninitialized-read reports?
bin=$(ls .gpu/tests/reliability_concurrency-*)
for mode in trim notrim; do
  for i in 1 2 3 4 5 6 7 8; do
    ( export PARPRIMS_QUICK_TESTS=1 PARPRIMS_LEAK_TEST_TRIM_EVERY=8
      [ $mode = notrim ] && export PARPRIMS_LEAK_TEST_NO_TRIM=1
      timeout 120 compute-sanitizer --tool initcheck --report-api-errors no --print-limit 3 \
        $bin --include-ignored --exact reliability_device_memory_does_not_grow --nocapture > /tmp/r/ic-$mode-$i.log 2>&1 ) &
  done
  wait
  echo "initcheck $mode: $(grep -h 'ERROR SUMMARY' /tmp/r/ic-$mode-*.log | grep -o '[0-9]* error' | tr '\n' ' ') $(( $(date +%s) - T0 ))s"
done
race gpu '^gpu$' three_pass_u64 unaligned_views_use_the_scalar_path
race rel '^(reliability_concurrency|reliability_oom|reliability_sizes|lookback_variants)$'
race strip '^conv_strip$'
finish
