#!/bin/bash
set -u
source .gpu-pack/common.sh
race scan_gpu '^scan_gpu$'
finish
