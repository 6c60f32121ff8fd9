#!/bin/bash
# Session 5, call 1: the pipelined teaching scans (bundle of the commit
# after d48d07d): benchmark, block sweep at 2^28, the whole GPU suite,
# then racecheck of scan_gpu's sanitizer_cases with the time left.
set -u
rm -rf /tmp/r
source .gpu-pack/common.sh
.gpu/bin/parprims bench scan --sizes 2^28 > /tmp/r/bench-scan.log 2>&1
echo "bench rc=$? $(( $(date +%s) - T0 ))s"; grep -E 'ceiling|i32' /tmp/r/bench-scan.log | head -20
timeout 110 .gpu/bin/scan --block-sweep --n 268435456 --reps 10 > /tmp/r/block-sweep-268435456.log 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 ))s"; grep -E 'Hillis|Blelloch' /tmp/r/block-sweep-268435456.log | head -30
bash scripts/gpu-tests.sh .gpu > /tmp/r/gpu-tests.txt 2>&1
echo "gpu-tests rc=$? $(( $(date +%s) - T0 ))s"; tail -45 /tmp/r/gpu-tests.txt
race sc '^scan_gpu$' --exact sanitizer_cases
finish
