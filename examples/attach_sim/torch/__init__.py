"""A small stand-in for PyTorch: the parts of torch.cuda an inference
server's memory goes through, so the examples and tests of `vramtrace
attach` run on the fake GPU without PyTorch.

torch.cuda keeps a caching allocator over the CUDA driver, reached with
ctypes (as PyTorch's is reached through libcudart: each driver function is
looked up once and called through its pointer ever after):

  torch.empty(nbytes, device="cuda")   a Tensor holding nbytes of device
                                       memory; del frees it to the cache
  torch.cuda.memory_snapshot()         the allocator's segments, in
                                       PyTorch's shape (device, address,
                                       total_size, allocated_size, stream,
                                       segment_type, segment_pool_id,
                                       blocks with their frames)
  torch.cuda.memory._record_memory_history()
                                       from now on each block keeps the
                                       Python stack that allocated it,
                                       innermost first, as PyTorch does
  torch.cuda.empty_cache(), memory_reserved(), is_initialized()
  torch.cuda.OutOfMemoryError          raised when the driver refuses even
                                       after the cache was given back

Like PyTorch's allocator, a block freed stays in its segment for the next
tensor of that size; a request the driver refuses is retried once after
every unused segment is freed (cuMemFree_v2), then raises.
"""
from . import cuda  # noqa: F401
from .cuda import OutOfMemoryError  # noqa: F401


class Tensor:
    """Device memory of nbytes; freed to the allocator when collected."""

    def __init__(self, block):
        self._block = block
        self.nbytes = block.requested
        self.device = "cuda:0"

    def data_ptr(self):
        return self._block.address

    def __del__(self):
        b, self._block = getattr(self, "_block", None), None
        if b is not None:
            cuda._free(b)


def empty(nbytes, device="cuda", dtype=None):
    if not str(device).startswith("cuda"):
        raise ValueError("only device memory in this stand-in")
    return Tensor(cuda._alloc(int(nbytes)))
