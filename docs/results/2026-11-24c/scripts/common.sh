# Shared by the call scripts: unpack, warm the cache, and a racecheck helper.
T0=$(date +%s)
LIMIT=${LIMIT:-585}
tar xJf .gpu-pack/gpu.tar.xz
export PARPRIMS_CACHE_DIR=/tmp/ppcache
mkdir -p /tmp/r
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > /tmp/r/device.txt
.gpu/bin/parprims warm-cache > /tmp/r/warm.log 2>&1
echo "warm done $(( $(date +%s) - T0 ))s"
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
# race TAG BINARY-REGEX [FILTER ARGS...]: racecheck those binaries, one at a time,
# with whatever time is left (logs in /tmp/r/race-TAG).
race() {
  local tag=$1 sel=$2; shift 2
  local l; l=$(left)
  if [ "$l" -le 15 ]; then echo "race $tag: no time left"; return; fi
  OUT=/tmp/r/race-$tag SANITIZE_JOBS=1 SANITIZE_TIMEOUT=$l SANITIZE_BUDGET=$l SANITIZE_BINARIES="$sel" \
    bash scripts/gpu-sanitize.sh racecheck -- "$@" 2>&1 | tee /tmp/r/race-$tag.txt | grep -v '^warm-cache'
}
finish() { tar czf $OUT/r.tgz -C /tmp r; echo "total $(( $(date +%s) - T0 ))s"; }
