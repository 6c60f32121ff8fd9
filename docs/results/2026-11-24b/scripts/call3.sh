#!/bin/bash
set -u
source .gpu-pack/common.sh
race conv '^conv$'
finish
