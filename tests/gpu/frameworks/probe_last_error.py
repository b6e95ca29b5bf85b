#!/usr/bin/env python3
"""Which step of a PyTorch program leaves a CUDA runtime error behind (diagnose.sh).

PyTorch checks cudaGetLastError after its kernel launches, so an error some earlier call
left in the runtime (and nobody checked) is reported at the next launch. This runs small
steps one by one and prints, after each, what cudaPeekAtLastError holds (and clears it),
so that the step that set it is named.

  probe_last_error.py            one line per step: STEP name error=CODE (NAME)
"""
import ctypes
import sys


def cudart():
    """The CUDA runtime PyTorch loaded (the soname resolves to the loaded copy)."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise RuntimeError("no libcudart found")


def main():
    import torch
    rt = cudart()
    rt.cudaGetErrorName.restype = ctypes.c_char_p
    steps = [
        ("init", lambda: torch.cuda.init()),
        ("device count", lambda: torch.cuda.device_count()),
        ("properties", lambda: torch.cuda.get_device_properties(0)),
        ("empty", lambda: torch.empty(1 << 20, device="cuda")),
        ("fill", lambda: torch.ones(1 << 20, device="cuda").sum().item()),
        ("manual_seed", lambda: torch.cuda.manual_seed(0)),
        ("generator", lambda: torch.cuda.default_generators[0].initial_seed()),
        ("uniform_", lambda: torch.empty(1 << 20, device="cuda").uniform_().sum().item()),
        ("normal_", lambda: torch.empty(1 << 20, device="cuda").normal_().sum().item()),
        ("randn", lambda: torch.randn(1 << 20, device="cuda").sum().item()),
        ("matmul", lambda: (torch.ones(256, 256, device="cuda") @
                            torch.ones(256, 256, device="cuda")).sum().item()),
    ]
    for name, step in steps:
        err = rt.cudaGetLastError()     # clear what an earlier step left
        failed = ""
        try:
            step()
        except Exception as e:          # the step itself failed: say so, go on
            failed = " raised=" + " ".join(str(e).split())[:120]
        err = rt.cudaGetLastError()
        print(f"STEP {name} error={err} ({rt.cudaGetErrorName(err).decode()}){failed}",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
