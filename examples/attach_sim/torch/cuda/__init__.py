"""torch.cuda of the stand-in (see torch/__init__.py): the caching
allocator and its snapshot."""
import ctypes
import threading
import traceback

from . import memory  # noqa: F401

CUDA_ERROR_OUT_OF_MEMORY = 2
ROUND = 512            # blocks are multiples of this
LARGE = 1 << 20        # a block above this gets a segment of its own
SEGMENT = 2 << 20      # small blocks share 2 MiB segments


class OutOfMemoryError(RuntimeError):
    pass


class _Block:
    __slots__ = ("address", "size", "requested", "state", "frames",
                 "segment")


class _Segment:
    __slots__ = ("address", "total_size", "blocks")


_lock = threading.RLock()
_tls = threading.local()
_drv = None
_ctx = None
_segments = []
_cached = {}   # size -> inactive blocks of that size


def _driver():
    """The driver, initialised once, with the context current on this
    thread (as the runtime makes it current on every thread)."""
    global _drv, _ctx
    with _lock:
        if _drv is None:
            lib = ctypes.CDLL("libcuda.so.1")
            for name, args in (
                    ("cuInit", [ctypes.c_uint]),
                    ("cuDeviceGet", [ctypes.POINTER(ctypes.c_int),
                                     ctypes.c_int]),
                    ("cuDevicePrimaryCtxRetain",
                     [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]),
                    ("cuCtxSetCurrent", [ctypes.c_void_p]),
                    ("cuMemAlloc_v2", [ctypes.POINTER(ctypes.c_uint64),
                                       ctypes.c_size_t]),
                    ("cuMemFree_v2", [ctypes.c_uint64]),
                    ("cuMemGetInfo_v2", [ctypes.POINTER(ctypes.c_size_t),
                                         ctypes.POINTER(ctypes.c_size_t)])):
                fn = getattr(lib, name)
                fn.argtypes = args
                fn.restype = ctypes.c_int
            dev = ctypes.c_int()
            ctx = ctypes.c_void_p()
            if lib.cuInit(0) or lib.cuDeviceGet(ctypes.byref(dev), 0) or \
                    lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev):
                raise RuntimeError("CUDA driver initialisation failed")
            _drv, _ctx = lib, ctx
    if not getattr(_tls, "current", False):
        _drv.cuCtxSetCurrent(_ctx)
        _tls.current = True
    return _drv


def is_initialized():
    return _drv is not None


def init():
    _driver()


def mem_get_info():
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    _driver().cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    return free.value, total.value


def _malloc(size):
    drv = _driver()
    p = ctypes.c_uint64()
    r = drv.cuMemAlloc_v2(ctypes.byref(p), size)
    if r == CUDA_ERROR_OUT_OF_MEMORY:
        empty_cache()
        r = drv.cuMemAlloc_v2(ctypes.byref(p), size)
    if r == CUDA_ERROR_OUT_OF_MEMORY:
        free, total = mem_get_info()
        raise OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {size / 2**20:.2f} MiB."
            f" GPU 0 has a total capacity of {total / 2**30:.2f} GiB of "
            f"which {free / 2**20:.2f} MiB is free.")
    if r:
        raise RuntimeError(f"cuMemAlloc_v2 failed: {r}")
    return p.value


def _frames():
    if not memory._recording:
        return []
    # innermost first, without the allocator's own frames
    st = traceback.extract_stack()[:-3]
    return [{"filename": f.filename, "line": f.lineno, "name": f.name}
            for f in reversed(st)]


def _alloc(nbytes):
    size = max(ROUND, (nbytes + ROUND - 1) // ROUND * ROUND)
    frames = _frames()
    with _lock:
        free = _cached.get(size)
        if free:
            b = free.pop()
        else:
            total = size if size > LARGE else SEGMENT
            if size <= LARGE:
                # a small block: carve a 2 MiB segment into blocks
                seg = _Segment()
                seg.address = _malloc(total)
                seg.total_size = total
                seg.blocks = []
                for off in range(0, total // size * size, size):
                    x = _Block()
                    x.address, x.size, x.requested = seg.address + off, \
                        size, size
                    x.state, x.frames, x.segment = "inactive", [], seg
                    seg.blocks.append(x)
                _segments.append(seg)
                _cached.setdefault(size, []).extend(reversed(seg.blocks))
                b = _cached[size].pop()
            else:
                seg = _Segment()
                seg.address = _malloc(total)
                seg.total_size = total
                b = _Block()
                b.address, b.size, b.segment = seg.address, size, seg
                seg.blocks = [b]
                _segments.append(seg)
        b.requested = nbytes
        b.state = "active_allocated"
        b.frames = frames
    return b


def _free(b):
    with _lock:
        b.state = "inactive"
        b.frames = []
        _cached.setdefault(b.size, []).append(b)


def empty_cache():
    """Gives every segment none of whose blocks is in use back to the
    driver."""
    with _lock:
        keep = []
        for seg in _segments:
            if all(b.state == "inactive" for b in seg.blocks):
                for b in seg.blocks:
                    _cached[b.size].remove(b)
                _driver().cuMemFree_v2(seg.address)
            else:
                keep.append(seg)
        _segments[:] = keep


def memory_reserved():
    with _lock:
        return sum(s.total_size for s in _segments)


def memory_allocated():
    with _lock:
        return sum(b.size for s in _segments for b in s.blocks
                   if b.state == "active_allocated")


def memory_snapshot():
    """The allocator's segments, as torch.cuda.memory_snapshot() gives
    them."""
    with _lock:
        out = []
        for s in _segments:
            used = [b for b in s.blocks if b.state == "active_allocated"]
            out.append({
                "device": 0,
                "address": s.address,
                "total_size": s.total_size,
                "allocated_size": sum(b.size for b in used),
                "active_size": sum(b.size for b in used),
                "requested_size": sum(b.requested for b in used),
                "stream": 0,
                "segment_type": "large" if s.total_size > LARGE
                                else "small",
                "segment_pool_id": (0, 0),
                "is_expandable": False,
                "blocks": [{"address": b.address, "size": b.size,
                            "requested_size": b.requested,
                            "state": b.state, "frames": list(b.frames)}
                           for b in s.blocks],
            })
        return out
