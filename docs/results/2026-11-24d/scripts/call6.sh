#!/bin/bash
# Session 5, call 6: the final code (bundle of c1c8e38, default block 256):
# scan benchmark at every size (CSV), then the whole GPU suite alongside
# memcheck, synccheck and racecheck of scan_gpu's sanitizer_cases.
set -u
rm -rf /tmp/r
source .gpu-pack/common.sh
timeout 200 .gpu/bin/parprims bench scan --reps 10 --out-dir /tmp/r/bench --compare docs/results/peers.csv > /tmp/r/bench-scan.log 2>&1
echo "bench rc=$? $(( $(date +%s) - T0 ))s"; grep -E 'ceiling:|target|HillisSteele |Blelloch|Lookback' /tmp/r/bench-scan.log | grep -E 'ceiling:|target|268435456 \(2' | head -30
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
BIN=$(ls .gpu/tests/scan_gpu-*)
L=$(( $(left) - 20 ))
for tool in memcheck synccheck racecheck; do
  ( extra=(); [ $tool = memcheck ] && extra=(--leak-check full); [ $tool = racecheck ] && extra=(--racecheck-report all)
    PROPTEST_CASES=4 PARPRIMS_QUICK_TESTS=1 timeout $L $SAN --tool $tool --error-exitcode 99 --print-limit 20 --report-api-errors no "${extra[@]}" $BIN --include-ignored --test-threads=1 --exact sanitizer_cases > /tmp/r/$tool.log 2>&1
    echo "rc=$?" >> /tmp/r/$tool.log ) &
done
bash scripts/gpu-tests.sh .gpu > /tmp/r/gpu-tests.txt 2>&1
echo "gpu-tests rc=$? $(( $(date +%s) - T0 ))s"; grep -E 'TOTAL|rc=[1-9]' /tmp/r/gpu-tests.txt | head
wait
for f in /tmp/r/memcheck.log /tmp/r/synccheck.log /tmp/r/racecheck.log; do
  echo "$f: $(grep -c '=========' $f) sanitizer lines, $(grep -c '\.\.\. ok$' $f) ok, $(grep -c 'FAILED' $f) FAILED, $(grep -hE '(ERROR|RACECHECK) SUMMARY' $f | tail -1) $(tail -1 $f)"
done
finish
