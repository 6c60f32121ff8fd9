#!/bin/bash
# Session 5, call 4 (bundle of 3249fc8+1, same as call 3): ncu shared-memory
# metrics of the teaching block scans; memcheck and synccheck of the scan
# sanitizer cases; racecheck of the teaching suites in 6 concurrent streams.
set -u
rm -rf /tmp/r
source .gpu-pack/common.sh
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
BIN=$(ls .gpu/tests/scan_gpu-*)
export PROPTEST_CASES=4 PARPRIMS_QUICK_TESTS=1
M=l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed
timeout 120 ncu --clock-control none -k regex:'_block_i32_sum' -c 40 --metrics $M \
  .gpu/bin/scan --algos HillisSteele,Blelloch,BlellochPadded --n 67108864 --reps 1 > /tmp/r/ncu.log 2>&1
echo "ncu rc=$? $(( $(date +%s) - T0 ))s"
grep -E "_block_i32_sum \(|wavefronts_mem_shared.sum|bank_conflicts|inst_executed.sum|issue_active|duration|per_second" /tmp/r/ncu.log | awk '{$1=$1};1' | head -80
L=$(( $(left) - 15 ))
SAFE="sanitizer_cases sub_views_at_odd_offsets block_size_sweep hillis_steele::u64_max blelloch::f64_min blelloch_padded::u32_custom_affine"
for tool in memcheck synccheck; do
  ( extra=(); [ $tool = memcheck ] && extra=(--leak-check full)
    timeout $L $SAN --tool $tool --error-exitcode 99 --print-limit 20 --report-api-errors no "${extra[@]}" $BIN --include-ignored --test-threads=1 $SAFE > /tmp/r/$tool.log 2>&1
    echo "rc=$?" >> /tmp/r/$tool.log ) &
done
for k in 0 1 2 3 4 5; do
  ( timeout $L $SAN --tool racecheck --racecheck-report all --error-exitcode 99 --print-limit 20 --report-api-errors no $BIN --include-ignored --test-threads=1 --exact $(cat .gpu-pack/rq$k.txt) > /tmp/r/race-$k.log 2>&1
    echo "rc=$?" >> /tmp/r/race-$k.log ) &
done
wait
for f in /tmp/r/memcheck.log /tmp/r/synccheck.log /tmp/r/race-*.log; do
  echo "$f: $(grep -c '\.\.\. ok$' $f) ok, $(grep -c 'FAILED' $f) FAILED, $(grep -hE '(ERROR|RACECHECK) SUMMARY' $f | tail -1) $(tail -1 $f)"
done
finish
