#!/bin/bash
set -u
LIMIT=290
source .gpu-pack/common.sh
race scan_gpu3 '^scan_gpu$' decoupled_lookback:: reduce_then_scan::
finish
