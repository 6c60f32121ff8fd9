#!/usr/bin/env bash
# Runs the tuning sweeps whose results docs/tuning.md records, from a bundle
# (scripts/gpu-bundle.sh) on a GPU machine: the look-back scan candidates
# (lookback_tuning), the single-pass compaction candidates (compact_tuning),
# the conv strip kernel (conv_tuning), the matvec and transpose variants
# (matvec_transpose_sweep; its cuBLAS rows need a toolchain run with
# `-p parprims-linalg --features cublas`, see docs/tuning.md) and the
# teaching scans' block-size sweep (the scan example,
# --block-sweep at 2^28 and at the lab's 123123123). Each sweep checks every
# candidate against the CPU before timing it.
#
#   bash scripts/gpu-tuning.sh [BUNDLE_DIR]                     # default .gpu
#   TUNING_ONLY='lookback|compact' bash scripts/gpu-tuning.sh   # a subset
#
# Full logs go to $OUT (or /tmp/gpu-tuning); the timing lines are printed.
# TUNING_TIMEOUT bounds each sweep in seconds (default 0: no limit). About
# four minutes on an H100. Exits non-zero if any sweep failed.
set -uo pipefail
bundle=${1:-.gpu}
out=${OUT:-/tmp/gpu-tuning}
mkdir -p "$out"
only=${TUNING_ONLY:-.}
export PARPRIMS_CACHE_DIR=${PARPRIMS_CACHE_DIR:-/tmp/parprims-tuning-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv,noheader 2>/dev/null | sed 's/^/device: /'
status=0
limit=${TUNING_TIMEOUT:-0}
sweep() { # name
    local name=$1 bin
    echo "$name" | grep -Eq "$only" || return 0
    bin=$(ls "$bundle"/tests/"$name"-* 2>/dev/null | head -1)
    if [ -z "$bin" ]; then echo "$name: not in the bundle"; status=1; return; fi
    echo "=== $name"
    timeout "$limit" "$bin" --include-ignored --nocapture --test-threads=1 >"$out/$name.log" 2>&1
    local rc=$?
    grep -E "ceiling|ms " "$out/$name.log" | grep -v '^test ' | sed 's/  */ /g'
    grep -E '^test result:|panicked' "$out/$name.log"
    [ $rc -eq 0 ] || { echo "$name: rc=$rc"; status=1; }
}
sweep lookback_tuning
sweep compact_tuning
sweep conv_tuning
sweep matvec_transpose_sweep
if echo block_sweep | grep -Eq "$only"; then
    echo "=== scan --block-sweep"
    for n in 268435456 123123123; do
        timeout "$limit" "$bundle/bin/scan" --block-sweep --n "$n" --reps 10 >"$out/block-sweep-$n.log" 2>&1 ||
            { echo "block sweep n=$n failed"; status=1; }
        grep -E "HillisSteele|Blelloch|ceiling" "$out/block-sweep-$n.log" | sed 's/  */ /g'
    done
fi
exit $status
