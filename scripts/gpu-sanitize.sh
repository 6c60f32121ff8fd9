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
# summary line per tool, and exits non-zero if any tool reported an error or
# any test failed.
set -uo pipefail
cd "$(dirname "$0")/.."
tools=${1:-memcheck,racecheck,synccheck,initcheck}
shift || true
[ "${1:-}" = "--" ] && shift
extra=("$@")
out=${OUT:-/tmp/sanitize}
mkdir -p "$out"
status=0
for tool in ${tools//,/ }; do
    errors=0; failed=0; ran=0
    for bin in .gpu/tests/*; do
        name=$(basename "$bin")
        log="$out/sanitize-$tool-${name%%-*}.log"
        args=(--tool "$tool" --error-exitcode 99 --print-limit 20)
        case $tool in
            memcheck) args+=(--leak-check full) ;;
            racecheck) args+=(--racecheck-report all) ;;
            initcheck) args+=(--track-unused-memory no) ;;
        esac
        compute-sanitizer "${args[@]}" "$bin" --include-ignored --test-threads=1 \
            --skip large_ "${extra[@]}" >"$log" 2>&1
        rc=$?
        ran=$((ran + 1))
        summary=$(grep -h "ERROR SUMMARY" "$log" | tail -1)
        n=$(echo "$summary" | grep -oE '[0-9]+ error' | grep -oE '[0-9]+' || echo 0)
        errors=$((errors + ${n:-0}))
        if [ $rc -ne 0 ] && [ "${n:-0}" = 0 ]; then failed=$((failed + 1)); fi
        printf '%-10s %-40s rc=%-3s %s\n' "$tool" "$name" "$rc" "${summary:-no summary}"
    done
    echo "SANITIZER $tool: $ran binaries, $errors errors reported, $failed binaries with failing tests"
    [ $errors -eq 0 ] && [ $failed -eq 0 ] || status=1
done
exit $status
