#!/usr/bin/env bash
# Builds what a GPU machine without a Rust toolchain needs to run the
# workspace: every release test binary, example and binary, stripped, in
# .gpu/, with .gpu/run.sh to run them there.
#
#   bash scripts/gpu-bundle.sh [--cublas] [--pack]     # here, from anywhere in the tree
#
#   --cublas   build the binaries and examples with the root package's
#              `cublas` feature (the benchmark's cuBLAS gemv baseline)
#   --pack     also write .gpu-pack/gpu.tar.xz (the bundle is tens of MiB;
#              xz makes it a few), for carrying it by a size-limited route;
#              unpack there with `tar xJf .gpu-pack/gpu.tar.xz`
#
# Then, on the GPU machine, in a copy of the tree that holds .gpu/:
#
#   bash .gpu/run.sh tests [FILTER...]   every test binary with --include-ignored
#                                        (GPU tests are #[ignore]d so CPU-only CI
#                                        skips them); FILTER goes to libtest; the
#                                        log also goes to $OUT/tests.log when OUT
#                                        is set; exits non-zero if any binary fails
#   bash .gpu/run.sh bin NAME [-- ARGS]  one example or binary (parprims, scan, ...)
#   bash .gpu/run.sh list                what the bundle holds
#
# scripts/gpu-tests.sh, gpu-sanitize.sh and gpu-tuning.sh take the same
# bundle. Test binaries are found from cargo's JSON messages
# (scripts/lib/cargo_executables.py), so their hashed names need no
# guessing. Tests must not read files through paths compiled in with
# env!("CARGO_MANIFEST_DIR"): the tree lies elsewhere on the GPU machine.
set -euo pipefail
cublas=0 pack=0
for arg in "$@"; do
    case $arg in
        --cublas) cublas=1 ;;
        --pack) pack=1 ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "gpu-bundle.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
    esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bundle=.gpu
collect="python3 $root/scripts/lib/cargo_executables.py"
rm -rf "$bundle"
mkdir -p "$bundle/tests" "$bundle/bin"

echo "gpu-bundle: building the test binaries (release)..." >&2
cargo test --workspace --release --no-run --message-format=json | $collect test >"$bundle/tests.tsv"

features=()
[ "$cublas" = 1 ] && features=(--features parprims/cublas)
echo "gpu-bundle: building the examples and binaries (release${features[*]:+, cublas})..." >&2
cargo build --workspace --release --examples --bins "${features[@]}" --message-format=json |
    $collect bin >"$bundle/bins.tsv"

# Test binaries keep their hashed file names (two crates may both have a
# test target called `gpu`); examples and binaries go by their names.
copy() { # source destination
    cp "$1" "$2"
    strip "$2" 2>/dev/null || true
}
while IFS=$'\t' read -r _kind _name path; do
    copy "$path" "$bundle/tests/$(basename "$path")"
done <"$bundle/tests.tsv"
while IFS=$'\t' read -r _kind name path; do
    copy "$path" "$bundle/bin/$name"
done <"$bundle/bins.tsv"
[ -s "$bundle/tests.tsv" ] || { echo "gpu-bundle: cargo reported no test binaries" >&2; exit 1; }

cat >"$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs what scripts/gpu-bundle.sh built; needs no Rust toolchain.
#   bash .gpu/run.sh tests [FILTER...] | bin NAME [-- ARGS] | list
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# tests/cli.rs runs the parprims binary: point it at the bundle's.
[ -x "$here/bin/parprims" ] && export PARPRIMS_BIN="$here/bin/parprims"
command=${1:-}
[ $# -gt 0 ] && shift
case $command in
    list)
        echo "tests:"; ls "$here/tests"
        echo "examples and binaries:"; ls "$here/bin" ;;
    bin)
        name=${1:?usage: run.sh bin NAME [-- ARGS]}; shift
        [ "${1:-}" = "--" ] && shift
        [ -x "$here/bin/$name" ] || { echo "run.sh: no $name in the bundle (run.sh list)" >&2; exit 2; }
        exec "$here/bin/$name" "$@" ;;
    tests)
        log=$(mktemp)
        trap 'rm -f "$log"' EXIT
        nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/device: /' | tee -a "$log"
        failed=()
        for test in "$here"/tests/*; do
            echo "=== $(basename "$test")" | tee -a "$log"
            "$test" --include-ignored "$@" 2>&1 | tee -a "$log"
            [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=("$(basename "$test")")
        done
        grep -h '^test result:' "$log" |
            awk '{p+=$4; f+=$6; i+=$8} END {print "TOTAL: " p " passed, " f " failed, " i " ignored"}' | tee -a "$log"
        [ ${#failed[@]} -eq 0 ] || echo "FAILED: ${failed[*]}" | tee -a "$log"
        if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$log" "$OUT/tests.log"; fi
        [ ${#failed[@]} -eq 0 ] ;;
    *)
        echo "usage: bash .gpu/run.sh tests [FILTER...] | bin NAME [-- ARGS] | list" >&2
        exit 2 ;;
esac
RUN
chmod +x "$bundle/run.sh"

size=$(du -sm "$bundle" | cut -f1)
echo "gpu-bundle: $(ls "$bundle/tests" | wc -l) test binaries, $(ls "$bundle/bin" | wc -l) examples and binaries, ${size} MiB in $bundle/" >&2
if [ "$pack" = 1 ]; then
    # .gitignore keeps .gpu-pack/ out of `git status`.
    mkdir -p .gpu-pack
    tar cJf .gpu-pack/gpu.tar.xz "$bundle"
    echo "gpu-bundle: packed into .gpu-pack/gpu.tar.xz ($(du -h .gpu-pack/gpu.tar.xz | cut -f1))" >&2
fi
echo "next, on the GPU machine: bash .gpu/run.sh tests" >&2
