# Sourced by gpu-tests.sh and gpu-sanitize.sh: readies a bundle (scripts/gpu-bundle.sh) for its
# test binaries on the GPU machine.
#
#   prepare_bundle BUNDLE_DIR
#
# Fills the kernel cache on every core first (a fresh machine otherwise
# spends minutes in NVRTC inside the first binaries, one module at a time),
# and points tests/cli.rs at the bundle's parprims binary (PARPRIMS_BIN).
# A bundle without bin/parprims is left as it is: the binaries then compile
# their kernels on first use.
prepare_bundle() {
    local bin=$1/bin/parprims
    [ -x "$bin" ] || return 0
    "$bin" warm-cache || echo "warm-cache failed: the binaries will compile on first use"
    PARPRIMS_BIN=$(cd "$(dirname "$bin")" && pwd)/parprims
    export PARPRIMS_BIN
}
