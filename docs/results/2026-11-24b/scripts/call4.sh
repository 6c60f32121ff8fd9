#!/bin/bash
set -u
source .gpu-pack/common.sh
# memcheck: 8 copies of the leak test at once (settling every 8 operations),
# to see whether any kernel touches freed or unmapped memory under load.
bin=$(ls .gpu/tests/reliability_concurrency-*)
for i in 1 2 3 4 5 6 7 8; do
  ( export PARPRIMS_QUICK_TESTS=1 PARPRIMS_LEAK_TEST_TRIM_EVERY=8
    timeout 120 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 5 \
      $bin --include-ignored --exact reliability_device_memory_does_not_grow --nocapture > /tmp/r/mc-$i.log 2>&1 ) &
done
wait
echo "memcheck x8: $(grep -h 'ERROR SUMMARY' /tmp/r/mc-*.log | grep -o '[0-9]* error' | tr '\n' ' ') results: $(grep -ho 'test result: [A-Za-z]*' /tmp/r/mc-*.log | sort | uniq -c | tr '\n' ' ') $(( $(date +%s) - T0 ))s"
race conv2 '^conv$' every_k_from_1_to_31_f64 every_k_from_1_to_31_i32 integers_wrap_exactly other_tiled_tunings random_cases_match_the_cpu views_of_caller_buffers
finish
