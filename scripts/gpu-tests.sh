#!/usr/bin/env bash
# Runs every test binary of a bundle (scripts/gpu-bundle.sh) on a GPU
# machine, --include-ignored: the binaries that need little memory six at
# a time, then the memory-hungry ones one at a time. The tuning sweeps
# (names ending in "_tuning" or "_sweep") are left to scripts/gpu-tuning.sh.
#
#   bash scripts/gpu-tests.sh [BUNDLE_DIR]      # default .gpu
#
# Each binary gets at most PER_BINARY_TIMEOUT seconds (default 420; the
# longest binary, sort_policies_gpu, takes about 160 s on an H200). Logs go to
# /tmp/gpu-tests/logs and, packed, to $OUT/gpu-test-logs.tgz. Prints one
# line per binary and a TOTAL line, and exits non-zero when any binary
# failed or timed out. At most about 10 minutes on an H100, the kernel
# cache's warm-up included.
# (`bash .gpu/run.sh tests` runs the same binaries one at a time.)
set -uo pipefail
bundle=${1:-.gpu}
logs=/tmp/gpu-tests/logs
mkdir -p "$logs"
per_binary_timeout=${PER_BINARY_TIMEOUT:-420}
# Binaries with multi-GiB inputs (the past-2^31 cases of histogram, sort
# and SpMV among them), and the one that fills the device on purpose
# (reliability_oom), run alone: in parallel they starve each other
# of memory and report OutOfMemory. So does reliability_concurrency, so that
# the device-wide free memory its leak check prints moves with its own
# allocations only (it asserts on its process's pool counts).
big='(_huge|_large|reliability_oom|reliability_sizes|reliability_concurrency|lookback_variants|^pool|histogram_gpu|sort_gpu|sort_policies_gpu|spmv_gpu|dist_sort_gpu)'
skip='(_tuning|_sweep)$'
run_one() {
    local bin=$1 name
    name=$(basename "$bin"); name=${name%-*}
    timeout "$per_binary_timeout" "$bin" --include-ignored >"$logs/$name.log" 2>&1
    local rc=$?
    local result
    result=$(grep -h '^test result:' "$logs/$name.log" | tail -1)
    printf '%-28s rc=%-3s %s\n' "$name" "$rc" "${result:-no result line}"
}
export -f run_one; export logs per_binary_timeout
# Warm the kernel cache, point tests/cli.rs at the bundle's parprims.
source "$(dirname "$0")/lib/bundle.sh"
prepare_bundle "$bundle"
small=(); large=()
for bin in "$bundle"/tests/*; do
    name=$(basename "$bin"); name=${name%-*}
    if [[ $name =~ $skip ]]; then continue; fi
    if [[ $name =~ $big ]]; then large+=("$bin"); else small+=("$bin"); fi
done
{
    # Six processes share the GPU here: each gives freed memory back at
    # every synchronisation, so none starves another.
    printf '%s\n' "${small[@]}" | PARPRIMS_POOL_KEEP_BYTES=0 xargs -P 6 -I{} bash -c 'run_one {}'
    for bin in "${large[@]}"; do run_one "$bin"; done
} | tee "$logs/summary.txt"
grep -h '^test result:' "$logs"/*.log | awk '{p+=$4; f+=$6} END {print "TOTAL: " p " passed, " f " failed"}' | tee -a "$logs/summary.txt"
tar czf "${OUT:-/tmp}/gpu-test-logs.tgz" -C /tmp/gpu-tests logs
if grep 'rc=' "$logs/summary.txt" | grep -qv 'rc=0 '; then
    echo "FAILED binaries:"; grep 'rc=' "$logs/summary.txt" | grep -v 'rc=0 '
    exit 1
fi
