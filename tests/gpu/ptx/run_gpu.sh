#!/bin/sh
# Runs a GPU test program; exit 77 (skip) where there is no NVIDIA GPU, because a program
# linked against libcuda cannot even start without the driver's libcuda.so.1.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
exec "$@"
