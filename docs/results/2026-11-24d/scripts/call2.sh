#!/bin/bash
# Session 5, call 2: teaching-scan experiment variants (branch exp-teaching).
set -u
T0=$(date +%s)
rm -rf /tmp/r; mkdir -p /tmp/r
export PARPRIMS_CACHE_DIR=/tmp/ppcache2
S=.gpu-pack/exp/scan
A=HillisSteele,Blelloch,BlellochPadded
run() { local tag=$1; shift; env "$@" timeout 100 $S --block-sweep --algos $A --n 268435456 --reps 10 > /tmp/r/$tag.log 2>&1;
  echo "== $tag rc=$? $(( $(date +%s) - T0 ))s"; grep -E '^scan' /tmp/r/$tag.log | awk '{print $2, $(NF-3), $(NF-1)}' | tr '\n' ';'; echo; }
run E1-base PARPRIMS_EXP_WARP_TAIL=0 PARPRIMS_EXP_PERSISTENT=0
run E2-tail PARPRIMS_EXP_WARP_TAIL=1 PARPRIMS_EXP_PERSISTENT=0
run E3-tail-persist PARPRIMS_EXP_WARP_TAIL=1 PARPRIMS_EXP_PERSISTENT=1
run E4-hs4 PARPRIMS_EXP_WARP_TAIL=1 PARPRIMS_EXP_PERSISTENT=0 PARPRIMS_EXP_HS_ITEMS=4 PARPRIMS_EXP_UNIFORM_ITEMS=16
PARPRIMS_EXP_WARP_TAIL=1 timeout 150 ncu --clock-control none -k regex:'blelloch_padded_block|hillis_steele_block' -c 2 \
  --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SpeedOfLight --section Occupancy \
  $S --algos HillisSteele,BlellochPadded --n 67108864 --reps 1 > /tmp/r/ncu.log 2>&1
echo "ncu rc=$? $(( $(date +%s) - T0 ))s"
grep -E "block_|Issue Slots Busy|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Shared" /tmp/r/ncu.log | head -60
tar czf $OUT/r.tgz -C /tmp r
