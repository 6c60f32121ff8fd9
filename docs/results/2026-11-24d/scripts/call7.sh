#!/bin/bash
# Session 5, call 7 (bundle of c1c8e38, the final code): racecheck of the 26
# hillis_steele:: suites not yet re-run, in 13 concurrent streams of two.
set -u
rm -rf /tmp/r
LIMIT=575
source .gpu-pack/common.sh
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
BIN=$(ls .gpu/tests/scan_gpu-*)
export PROPTEST_CASES=4 PARPRIMS_QUICK_TESTS=1
L=$(( $(left) - 15 ))
for k in $(seq 0 12); do
  ( timeout $L $SAN --tool racecheck --racecheck-report all --error-exitcode 99 --print-limit 20 --report-api-errors no $BIN --include-ignored --test-threads=1 --exact $(cat .gpu-pack/hq$k.txt) > /tmp/r/race-$k.log 2>&1
    echo "rc=$?" >> /tmp/r/race-$k.log ) &
done
wait
for f in /tmp/r/race-*.log; do
  echo "$f: $(grep -c '=========' $f) sanitizer lines, ok: $(grep '\.\.\. ok$' $f | sed 's/test hillis_steele:://; s/ \.\.\. ok//' | tr '\n' ' ') $(grep -c 'FAILED' $f) FAILED, $(grep -hE 'RACECHECK SUMMARY' $f | tail -1) $(tail -1 $f)"
done
finish
