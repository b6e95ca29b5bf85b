#!/bin/sh
# Wrapper of run-workloads: exit 77 (skip) where no NVIDIA GPU (and so no libcuda.so.1).
#   run_workloads.sh RUN_WORKLOADS_BINARY PTX_DIR small|default
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
exec "$@"
