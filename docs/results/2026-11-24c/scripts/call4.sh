#!/bin/bash
# Session 4, call 4: is the initcheck report of reliability_pool_streams a real
# stream-ordering bug? memcheck's stream-ordered race tracking on the same
# load, initcheck of one process alone; then racecheck of the queue ($1).
set -u
rm -rf /tmp/r
source .gpu-pack/common.sh
export PARPRIMS_QUICK_TESTS=1
pool=$(ls .gpu/tests/reliability_pool_streams-*)
conc=$(ls .gpu/tests/reliability_concurrency-*)
so() { timeout 100 compute-sanitizer --tool memcheck --track-stream-ordered-races all --report-api-errors no --print-limit 5 "$@"; echo "rc=$?"; }
# A. stream-ordered race tracking: one process alone, then 8 at once (pool test, then the leak test)
so $pool --include-ignored --exact reliability_eight_streams_allocate_fill_copy > /tmp/r/so-pool-alone.log 2>&1
for i in 1 2 3 4 5 6 7 8; do so $pool --include-ignored --exact reliability_eight_streams_allocate_fill_copy > /tmp/r/so-pool-8-$i.log 2>&1 & done; wait
for i in 1 2 3 4 5 6 7 8; do so $conc --include-ignored --exact reliability_device_memory_does_not_grow > /tmp/r/so-leak-8-$i.log 2>&1 & done; wait
for f in /tmp/r/so-*.log; do echo "$(basename $f): $(grep -h 'ERROR SUMMARY' $f | head -1) $(grep -h '^test result' $f | cut -c1-30) $(grep -h '^rc=' $f)"; done
echo "A done $(( $(date +%s) - T0 ))s"
# B. initcheck, one process alone, three runs one after another
for i in 1 2 3; do
  timeout 100 compute-sanitizer --tool initcheck --report-api-errors no --print-limit 3 $pool --include-ignored --exact reliability_eight_streams_allocate_fill_copy > /tmp/r/ic-pool-alone-$i.log 2>&1
  echo "ic-pool-alone-$i rc=$? $(grep -h 'ERROR SUMMARY' /tmp/r/ic-pool-alone-$i.log | head -1) $(grep -h '^test result' /tmp/r/ic-pool-alone-$i.log | cut -c1-30)"
done
echo "B done $(( $(date +%s) - T0 ))s"
unset PARPRIMS_QUICK_TESTS
race q '^scan_gpu$' $(cat "$1")
finish
