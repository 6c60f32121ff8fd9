#!/bin/bash
# Call 1: teaching-scan kernel profile, initcheck leak-test experiment, racecheck part 1.
set -u
T0=$(date +%s)
tar xJf .gpu-pack/gpu.tar.xz
export PARPRIMS_CACHE_DIR=/tmp/ppcache
mkdir -p /tmp/r
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > /tmp/r/device.txt
.gpu/bin/parprims warm-cache > /tmp/r/warm.log 2>&1
echo "warm done $(( $(date +%s) - T0 ))s"
# 1. per-kernel profile of the teaching scans at 2^28 i32
timeout 90 ncu --clock-control none -k regex:'scan_(hillis|blelloch|uniform)' --launch-count 45 \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum \
  .gpu/bin/parprims bench scan --sizes 2^28 --types i32 --algos HillisSteele,Blelloch,BlellochPadded --reps 1 --seed 7 > /tmp/r/ncu-teaching.log 2>&1
echo "ncu done rc=$? $(( $(date +%s) - T0 ))s"
# 2. initcheck: 8 copies of the leak test at once, default pool, then same-stream reuse only
bin=$(ls .gpu/tests/reliability_concurrency-*)
export PARPRIMS_QUICK_TESTS=1
for mode in default samestream; do
  for i in 1 2 3 4 5 6 7 8; do
    ( [ $mode = samestream ] && export PARPRIMS_LEAK_TEST_SAME_STREAM_REUSE=1
      timeout 150 compute-sanitizer --tool initcheck --report-api-errors no --print-limit 3 \
        $bin --include-ignored --exact reliability_device_memory_does_not_grow > /tmp/r/ic-$mode-$i.log 2>&1 ) &
  done
  wait
  echo "initcheck $mode: $(grep -h 'ERROR SUMMARY' /tmp/r/ic-$mode-*.log | tr '\n' ' ') $(( $(date +%s) - T0 ))s"
done
unset PARPRIMS_QUICK_TESTS
# 3. racecheck, with GPU utilisation sampled
nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader -lms 1000 > /tmp/r/util.log 2>&1 &
UTIL=$!
left=$(( 585 - ($(date +%s) - T0) ))
OUT=/tmp/r/race SANITIZE_JOBS=2 SANITIZE_TIMEOUT=$left SANITIZE_BUDGET=$left \
  SANITIZE_BINARIES='^(kernel_compile|nvrtc_compile|linalg|parprims|parprims_kernels|scan_cpu|reliability_determinism|gpu|transpose)$' \
  bash scripts/gpu-sanitize.sh racecheck > /tmp/r/race-summary.txt 2>&1
kill $UTIL
cat /tmp/r/race-summary.txt
tar czf $OUT/call1.tgz -C /tmp r
echo "total $(( $(date +%s) - T0 ))s"
