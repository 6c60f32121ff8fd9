#!/bin/bash
# Session 5, call 3: the second teaching-scan design (bundle of 3249fc8+1):
# scan benchmark at every size (CSV), block sweeps, the whole GPU suite,
# racecheck of the sanitizer cases and chosen suites with the time left.
set -u
rm -rf /tmp/r
source .gpu-pack/common.sh
timeout 220 .gpu/bin/parprims bench scan --reps 10 --out-dir /tmp/r/bench --compare docs/results/peers.csv > /tmp/r/bench-scan.log 2>&1
echo "bench rc=$? $(( $(date +%s) - T0 ))s"; grep -E 'ceiling|target|268435456 \(2' /tmp/r/bench-scan.log | head -40
A=HillisSteele,Blelloch,BlellochPadded
for n in 268435456 123123123; do
  timeout 80 .gpu/bin/scan --block-sweep --algos $A --n $n --reps 10 > /tmp/r/block-sweep-$n.log 2>&1
  echo "sweep $n rc=$? $(( $(date +%s) - T0 ))s"; grep -E '^scan' /tmp/r/block-sweep-$n.log | awk '{print $2, $(NF-3)}' | tr '\n' ';'; echo
done
bash scripts/gpu-tests.sh .gpu > /tmp/r/gpu-tests.txt 2>&1
echo "gpu-tests rc=$? $(( $(date +%s) - T0 ))s"; grep -E 'TOTAL|FAIL|fail|panick' /tmp/r/gpu-tests.txt | head -20
race t1 '^scan_gpu$' sanitizer_cases sub_views_at_odd_offsets blelloch::u64_sum blelloch_padded::f64_sum hillis_steele::u32_custom_affine blelloch::u32_custom_affine
finish
