#!/usr/bin/env python3
"""torch_check.py — PyTorch's CUDA caching allocator under the preload, for
run_gpu.py (only where `import torch` works with a GPU).

    torch_check.py --out FILE

A 256 MiB tensor (one cudaMalloc of a 256 MiB segment), freed and the
cache emptied (its cudaFree); then a tensor of twice the card, whose
OutOfMemoryError is caught; the cache emptied again. Writes evlog lines
(tests/gpu/evlog.h) to FILE, and "meminfo FREE TOTAL" (the driver's
reading) and "oom-caught BYTES" (the caught OOM's request).
The native allocator is asked for explicitly: expandable segments would
allocate through the VMM calls instead.
"""
import os
import sys

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:False"
import torch  # noqa: E402


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--out":
        print("usage: torch_check.py --out FILE", file=sys.stderr)
        return 2
    with open(sys.argv[2], "w", buffering=1) as out:
        out.write(f"prog torch-{torch.__version__} torch default\n")
        total = torch.cuda.get_device_properties(0).total_memory
        out.write(f"device 0 {total}\n")
        # The driver's free/total (cudaMemGetInfo), what an OOM reports.
        free_b, total_b = torch.cuda.mem_get_info(0)
        out.write(f"meminfo {free_b} {total_b}\n")
        x = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        out.write(f"alloc device 0 {256 << 20} tensor\n")
        del x
        torch.cuda.empty_cache()
        out.write("free tensor\n")
        try:
            torch.empty(2 * total, dtype=torch.uint8, device="cuda")
        except torch.cuda.OutOfMemoryError:
            out.write(f"oom-caught {2 * total}\n")
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
