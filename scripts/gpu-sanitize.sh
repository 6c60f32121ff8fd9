#!/usr/bin/env bash
# Runs the bundled test binaries (scripts/gpu-bundle.sh) under
# compute-sanitizer, one tool at a time, on a GPU machine with no Rust
# toolchain.
#
#   bash scripts/gpu-sanitize.sh [TOOLS] [-- TEST-FILTER-ARGS]
#
# TOOLS: comma-separated subset of memcheck,racecheck,synccheck,initcheck
# (default: all four). Tests whose names contain `large_` (multi-GiB inputs,
# minutes under instrumentation) and the tuning-sweep binaries are skipped;
# everything else runs with --include-ignored, one test thread, so reports
# are attributable. Writes one log per tool and binary to $OUT (or
# /tmp/sanitize) with a .times twin (each line stamped with the seconds
# since the binary started, so the cost of each test under the tool is on
# record), prints a summary line per tool and binary, and exits non-zero if
# any tool reported an error, any test failed, or any binary did not finish
# in its time.
#
# The environment:
#   - PROPTEST_CASES=4 and PARPRIMS_QUICK_TESTS=1 (defaults; override to
#     change) make the heavy tests small: every test binary keeps its tests
#     and code paths but draws shorter lengths, smaller shapes and fewer
#     operations (parprims_testkit::testing), and the tours run --quick;
#   - SANITIZE_TIMEOUT: seconds per binary under each tool (default 150;
#     0 for no limit); a binary stopped by it is reported as TIMEOUT;
#   - SANITIZE_BUDGET: seconds for the whole run (default 540, which fits a
#     10-minute remote command; 0 for no limit); binaries not started
#     before it runs out are reported as NOT RUN;
#   - SANITIZE_JOBS: binaries run at once under a tool (default 1; the
#     multi-GiB ones always alone, after the others; initcheck always one
#     at a time, see below). More jobs help memcheck, not racecheck;
#   - SANITIZE_BINARIES: an extended regex selecting binaries by name,
#     e.g. SANITIZE_BINARIES='^(scan_gpu|compact)'.
#
# The whole suite under racecheck takes about two hours on an H100 (scan_gpu
# alone over an hour):
#   SANITIZE_TIMEOUT=0 SANITIZE_BUDGET=0 bash scripts/gpu-sanitize.sh racecheck
#
# CUDA API errors are not reported (--report-api-errors no): several tests
# provoke them on purpose (out-of-memory requests, missing kernel entries)
# and check that the library turns them into typed errors. The kernels'
# own memory, race, barrier and initialisation errors are what is counted.
set -uo pipefail
cd "$(dirname "$0")/.."
tools=${1:-memcheck,racecheck,synccheck,initcheck}
shift || true
[ "${1:-}" = "--" ] && shift
extra=("$@")
out=${OUT:-/tmp/sanitize}
mkdir -p "$out"
export PROPTEST_CASES=${PROPTEST_CASES:-4}
export PARPRIMS_QUICK_TESTS=${PARPRIMS_QUICK_TESTS:-1}
per_binary=${SANITIZE_TIMEOUT:-150}
budget=${SANITIZE_BUDGET:-540}
select=${SANITIZE_BINARIES:-.}
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)}
if [ -z "$sanitizer" ]; then
    echo "compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2
    exit 2
fi
started=$(date +%s)
jobs=${SANITIZE_JOBS:-1}
# Binaries with multi-GiB inputs, or that fill the device on purpose, run
# alone after the others (in parallel they would starve each other of
# memory, as in gpu-tests.sh).
big='(_huge|_large|reliability_oom|reliability_sizes|lookback_variants)'
results="$out/.results"
: >"$results"

# Copies stdin to stdout, and to the file $1 with every line prefixed by the
# seconds since the binary started: libtest ends a test's line ("test x ...
# ok") when the test ends, so the .times file says what each test cost under
# the tool.
stamp() {
    local t0=$SECONDS line
    while IFS= read -r line || [ -n "$line" ]; do
        printf '%s\n' "$line"
        printf '%5ds %s\n' $((SECONDS - t0)) "$line" >&3
    done 3>>"$1"
}

# One binary under one tool: writes "tool name status-word summary" to the
# results file and prints the summary line. Status words: clean, errors=N,
# failed, timeout, notrun, skipped (every test of the binary is a large_ one).
sanitize_one() {
    local tool=$1 bin=$2 name short elapsed left limit log rc summary n word
    name=$(basename "$bin"); short=${name%-*}
    elapsed=$(( $(date +%s) - started ))
    if [ "$budget" -gt 0 ]; then left=$(( budget - elapsed )); else left=-1; fi
    if [ "$budget" -gt 0 ] && [ "$left" -le 10 ]; then
        summary="NOT RUN (budget of ${budget}s spent)"; word=notrun
        printf '%-10s %-40s %s\n' "$tool" "$short" "$summary"
        echo "$tool $short $word" >>"$results"
        return
    fi
    # 0 means no limit (`timeout 0` runs the command without one).
    limit=$per_binary
    if [ "$left" -ge 0 ] && { [ "$limit" -eq 0 ] || [ "$left" -lt "$limit" ]; }; then limit=$left; fi
    log="$out/sanitize-$tool-$short.log"
    local args=(--tool "$tool" --error-exitcode 99 --print-limit 20 --report-api-errors no)
    case $tool in
        memcheck) args+=(--leak-check full) ;;
        racecheck) args+=(--racecheck-report all) ;;
    esac
    local t0; t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$sanitizer" "${args[@]}" "$bin" --include-ignored \
        --test-threads=1 --skip large_ "${extra[@]}" 2>&1 | stamp "${log%.log}.times" >"$log"
    rc=${PIPESTATUS[0]}
    # memcheck, synccheck, initcheck end with "ERROR SUMMARY: N errors";
    # racecheck with "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)".
    summary=$(grep -hE "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1)
    n=$(echo "$summary" | grep -oE '[0-9]+ error' | grep -oE '[0-9]+' || echo 0)
    n=${n:-0}
    if grep -q "Target application doesn't exist\|Unrecognized option\|unrecognised option" "$log"; then
        summary="SANITIZER DID NOT RUN THE BINARY (see $log)"; n=1
    fi
    # A binary that never calls CUDA (CPU-only unit tests) has nothing to
    # instrument: the sanitizer says so and exits 255. Clean if its tests passed.
    if grep -q "terminated before first instrumented API call" "$log" &&
        grep -q '^test result: ok' "$log"; then
        summary="no CUDA calls (tests passed, nothing to instrument)"; n=0; rc=0
    fi
    # A binary whose tests are all `large_` (scan_large, lookback_large,
    # gpu_huge) runs none of them: say so rather than call it clean.
    if grep -qE '^test result: ok\. 0 passed; 0 failed; 0 ignored; 0 measured; [1-9][0-9]* filtered out' "$log"; then
        word=skipped
        summary="SKIPPED: every test is a large_ one"
    elif [ "$n" != 0 ]; then
        word="errors=$n"
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        word=timeout
        summary="TIMEOUT after ${limit}s ($(grep -c '^test .* ok$' "$log") tests passed before)"
    elif [ $rc -ne 0 ]; then
        word=failed
    else
        word=clean
    fi
    printf '%-10s %-40s rc=%-3s %4ss %s\n' "$tool" "$short" "$rc" "$(( $(date +%s) - t0 ))" \
        "${summary:-no summary}"
    echo "$tool $short $word" >>"$results"
}
export -f sanitize_one stamp
export started budget per_binary out sanitizer results
export extra_joined="${extra[*]:-}"

# Warm the kernel cache, point tests/cli.rs at the bundle's parprims.
source scripts/lib/bundle.sh
prepare_bundle .gpu
# Benchmarks-as-tests (tuning sweeps) are left out, as in gpu-tests.sh.
skip='(_tuning|_sweep)$'

status=0
for tool in ${tools//,/ }; do
    small=(); large=()
    for bin in .gpu/tests/*; do
        name=$(basename "$bin"); short=${name%-*}
        [[ $short =~ $skip ]] && continue
        echo "$short" | grep -Eq "$select" || continue
        if [[ $short =~ $big ]]; then large+=("$bin"); else small+=("$bin"); fi
    done
    # initcheck runs one binary at a time whatever SANITIZE_JOBS says: with
    # 8 instrumented processes on the GPU it reported uninitialized reads of
    # memory that had been written (the results were exact), even in a
    # binary that uses nothing but gpu-core, and never with one process
    # alone (docs/RELIABILITY.md).
    tool_jobs=$jobs
    [ "$tool" = initcheck ] && tool_jobs=1
    # `extra` (test filter arguments) is an array: re-split it in the jobs.
    if [ ${#small[@]} -gt 0 ]; then
        printf '%s\n' "${small[@]}" |
            xargs -P "$tool_jobs" -I{} bash -c 'extra=($extra_joined); sanitize_one "$0" "$1"' "$tool" {}
    fi
    for bin in "${large[@]}"; do sanitize_one "$tool" "$bin"; done
    ran=$(grep -c "^$tool .* \(clean\|errors=.*\|failed\|timeout\)$" "$results")
    skipped=$(grep -c "^$tool .* skipped$" "$results")
    errors=$(grep "^$tool " "$results" | grep -oE "errors=[0-9]+" | cut -d= -f2 | awk "{s+=\$1} END {print s+0}")
    failed=$(grep -c "^$tool .* failed$" "$results")
    timed_out=$(grep -c "^$tool .* timeout$" "$results")
    not_run=$(grep -c "^$tool .* notrun$" "$results")
    echo "SANITIZER $tool: $ran binaries, ${errors:-0} errors reported, $failed binaries with failing tests, $timed_out timed out, $not_run not run, $skipped with only large_ tests"
    [ "${errors:-0}" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$timed_out" -eq 0 ] && [ "$not_run" -eq 0 ] || status=1
done
rm -f "$results"
exit $status
