#!/bin/bash
# Session 4, call 1: the final code's benchmark and full GPU suite, the
# initcheck control (8 copies of reliability_pool_streams at once), then
# racecheck of the first not-yet-racechecked scan_gpu tests.
set -u
source .gpu-pack/common.sh
# 1. scan benchmark at 2^28 (quiet GPU, before anything else)
.gpu/bin/parprims bench scan --sizes 2^28 > /tmp/r/bench-scan.log 2>&1
echo "bench rc=$? $(( $(date +%s) - T0 ))s"; grep -E 'i32|f32|u64|i64|ceiling' /tmp/r/bench-scan.log | head -30
# 2. initcheck control: 8 copies of the gpu-core-only pool/streams test at once, two rounds
bin=$(ls .gpu/tests/reliability_pool_streams-*)
for round in 1 2; do
  for i in 1 2 3 4 5 6 7 8; do
    ( PARPRIMS_QUICK_TESTS=1 timeout 120 compute-sanitizer --tool initcheck --report-api-errors no --print-limit 3 \
        $bin --include-ignored --exact reliability_eight_streams_allocate_fill_copy > /tmp/r/ic-pool-$round-$i.log 2>&1; echo "rc=$?" >> /tmp/r/ic-pool-$round-$i.log ) &
  done
  wait
  echo "initcheck pool round $round: $(grep -h 'ERROR SUMMARY' /tmp/r/ic-pool-$round-*.log | tr '\n' ' ') | $(grep -h '^rc=' /tmp/r/ic-pool-$round-*.log | tr '\n' ' ') $(( $(date +%s) - T0 ))s"
done
# 3. the whole GPU suite
bash scripts/gpu-tests.sh .gpu > /tmp/r/gpu-tests.txt 2>&1   # also writes $OUT/gpu-test-logs.tgz
echo "gpu-tests rc=$? $(( $(date +%s) - T0 ))s"; tail -40 /tmp/r/gpu-tests.txt
# 4. racecheck with the time left: the remaining scan_gpu tests, in name order
race q1 '^scan_gpu$' $(cat .gpu-pack/queue.txt)
finish
