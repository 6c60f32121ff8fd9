#!/usr/bin/env bash
# Runs the bundled GPU test suite under compute-sanitizer, one tool at a time,
# on a GPU machine with no Rust toolchain.
#
#   ../shared/tools/gpu-bundle                  # here: build .gpu/
#   bash scripts/gpu-sanitize.sh [TOOLS] [-- TEST-FILTER-ARGS]   # there
#
# TOOLS: comma-separated subset of memcheck,racecheck,synccheck,initcheck
# (default: all four). Tests whose names contain `large_` (multi-GiB inputs,
# minutes under instrumentation) are skipped; everything else runs with
# --include-ignored, one test thread, so reports are attributable.
# Writes one log per tool and binary to $OUT (or /tmp/sanitize), prints a
# summary line per tool and binary, and exits non-zero if any tool reported
# an error, any test failed, or any binary did not finish in its time.
#
# Fitting the 10-minute command limit of the GPU machine:
#   - the environment makes the heavy tests small: PROPTEST_CASES=4 (every
#     proptest that uses proptest's default configuration honours it) and
#     PARPRIMS_RELIABILITY_QUICK=1 (the reliability_* binaries run fewer
#     operations and smaller inputs); both can be overridden;
#   - SANITIZE_TIMEOUT (seconds, default 150) bounds each binary under each
#     tool; a binary stopped by it is reported as TIMEOUT (not as clean);
#   - SANITIZE_BUDGET (seconds, default 540) bounds the whole run: binaries
#     not started before it runs out are listed as NOT RUN;
#   - SANITIZE_BINARIES (an extended regex, default: all) selects binaries
#     by name, e.g. SANITIZE_BINARIES='^(scan_gpu|compact)' — so one command
#     per tool, or per group of binaries, covers the suite in several calls.
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
export PARPRIMS_RELIABILITY_QUICK=${PARPRIMS_RELIABILITY_QUICK:-1}
per_binary=${SANITIZE_TIMEOUT:-150}
budget=${SANITIZE_BUDGET:-540}
select=${SANITIZE_BINARIES:-.}
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)}
if [ -z "$sanitizer" ]; then
    echo "compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2
    exit 2
fi
started=$(date +%s)
status=0
for tool in ${tools//,/ }; do
    errors=0; failed=0; ran=0; timed_out=0; not_run=0
    for bin in .gpu/tests/*; do
        name=$(basename "$bin")
        short=${name%-*}
        echo "$short" | grep -Eq "$select" || continue
        elapsed=$(( $(date +%s) - started ))
        left=$(( budget - elapsed ))
        if [ "$left" -le 10 ]; then
            printf '%-10s %-40s NOT RUN (budget of %ss spent)\n' "$tool" "$short" "$budget"
            not_run=$((not_run + 1))
            continue
        fi
        limit=$(( left < per_binary ? left : per_binary ))
        log="$out/sanitize-$tool-$short.log"
        args=(--tool "$tool" --error-exitcode 99 --print-limit 20 --report-api-errors no)
        case $tool in
            memcheck) args+=(--leak-check full) ;;
            racecheck) args+=(--racecheck-report all) ;;
        esac
        timeout --kill-after=10 "$limit" "$sanitizer" "${args[@]}" "$bin" --include-ignored \
            --test-threads=1 --skip large_ "${extra[@]}" >"$log" 2>&1
        rc=$?
        ran=$((ran + 1))
        # memcheck, synccheck, initcheck end with "ERROR SUMMARY: N errors";
        # racecheck with "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)".
        summary=$(grep -hE "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1)
        n=$(echo "$summary" | grep -oE '[0-9]+ error' | grep -oE '[0-9]+' || echo 0)
        if grep -q "Target application doesn't exist\|Unrecognized option\|unrecognised option" "$log"; then
            summary="SANITIZER DID NOT RUN THE BINARY (see $log)"; n=1
        fi
        errors=$((errors + ${n:-0}))
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            timed_out=$((timed_out + 1))
            summary="TIMEOUT after ${limit}s ($(grep -c '^test .* ok$' "$log") tests passed before)"
        elif [ $rc -ne 0 ] && [ "${n:-0}" = 0 ]; then
            failed=$((failed + 1))
        fi
        printf '%-10s %-40s rc=%-3s %s\n' "$tool" "$short" "$rc" "${summary:-no summary}"
    done
    echo "SANITIZER $tool: $ran binaries, $errors errors reported, $failed binaries with failing tests, $timed_out timed out, $not_run not run"
    [ $errors -eq 0 ] && [ $failed -eq 0 ] && [ $timed_out -eq 0 ] && [ $not_run -eq 0 ] || status=1
done
exit $status
