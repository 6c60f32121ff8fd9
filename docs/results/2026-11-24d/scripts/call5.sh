#!/bin/bash
# Session 5, call 5 (same bundle): racecheck of the rest of the Blelloch suites, block_size_sweep and 12 Hillis-Steele suites in 8 streams.
set -u
rm -rf /tmp/r
source .gpu-pack/common.sh
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
BIN=$(ls .gpu/tests/scan_gpu-*)
export PROPTEST_CASES=4 PARPRIMS_QUICK_TESTS=1
L=$(( $(left) - 15 ))
for k in 0 1 2 3 4 5 6 7; do
  ( timeout $L $SAN --tool racecheck --racecheck-report all --error-exitcode 99 --print-limit 20 --report-api-errors no $BIN --include-ignored --test-threads=1 --exact $(cat .gpu-pack/rq$k.txt) > /tmp/r/race-$k.log 2>&1
    echo "rc=$?" >> /tmp/r/race-$k.log ) &
done
wait
for f in /tmp/r/race-*.log; do
  echo "$f: $(grep -c '=========' $f) sanitizer lines, $(grep -c '\.\.\. ok$' $f) ok, $(grep -c 'FAILED' $f) FAILED, $(grep -hE '(ERROR|RACECHECK) SUMMARY' $f | tail -1) $(tail -1 $f)"
done
finish
