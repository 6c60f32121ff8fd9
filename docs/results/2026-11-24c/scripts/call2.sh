#!/bin/bash
# Session 4, calls 2+: racecheck of the scan_gpu tests still queued ($1: queue file).
set -u
rm -rf /tmp/r
source .gpu-pack/common.sh
race q '^scan_gpu$' $(cat "$1")
finish
