#!/usr/bin/env python3
"""client_ctypes.py — the shared workload (workload.c, workload mode) through
Python ctypes, the route of Python code that calls the driver itself:
ctypes.CDLL("libcuda.so.1") dlopens it RTLD_LOCAL and looks every name up
with dlsym on that handle. Same calls, sizes and order as workload.c, so the
expectation JSON it writes is identical to the C clients' for the same
device count (run_case.py checks that). Options: --devices N, --expect FILE.
"""
import argparse
import ctypes as C
import json
import os
import sys

MiB, GiB = 1 << 20, 1 << 30
OK, INVALID_VALUE, OOM, NOT_INIT, INVALID_CTX = 0, 1, 2, 3, 201
NOT_REGISTERED = 713
LEGACY, PER_THREAD = C.c_void_p(1), C.c_void_p(2)
FAMS = ("device", "async", "vmm", "managed")
u64, sz_t = C.c_ulonglong, C.c_size_t


class Location(C.Structure):
    _fields_ = [("type", C.c_int), ("id", C.c_int)]


class AllocProp(C.Structure):  # CUmemAllocationProp
    _fields_ = [("type", C.c_int), ("requestedHandleTypes", C.c_int),
                ("location", Location), ("win32HandleMetaData", C.c_void_p),
                ("allocFlags", C.c_ubyte * 8)]


class PoolProps(C.Structure):  # CUmemPoolProps
    _fields_ = [("allocType", C.c_int), ("handleTypes", C.c_int),
                ("location", Location), ("win32SecurityAttributes", C.c_void_p),
                ("maxSize", sz_t), ("usage", C.c_ushort),
                ("reserved", C.c_ubyte * 54)]


class AccessDesc(C.Structure):  # CUmemAccessDesc
    _fields_ = [("location", Location), ("flags", C.c_int)]


class Fail(Exception):
    pass


def expect(want, got, what):
    if got != want:
        raise Fail(f"{what} returned {got}, expected {want}")


class Workload:
    def __init__(self, lib, ndev_wanted):
        self.lib = lib
        self.counters = {}
        self.host = {f: self.zero() for f in ("pinned", "registered")}
        self.ooms = []
        self.keep = []  # host buffers that must outlive the run
        expect(NOT_INIT, lib.cuDeviceGetCount(C.byref(C.c_int())), "pre-init count")
        expect(OK, lib.cuInit(0), "cuInit")
        n = C.c_int()
        expect(OK, lib.cuDeviceGetCount(C.byref(n)), "cuDeviceGetCount")
        if ndev_wanted and n.value != ndev_wanted:
            raise Fail(f"driver has {n.value} devices, want {ndev_wanted}")
        self.ndev = n.value
        self.ctx, self.total, self.base = [], [], []
        for d in range(self.ndev):
            ctx, tot, fr = C.c_void_p(), sz_t(), sz_t()
            expect(OK, lib.cuDevicePrimaryCtxRetain(C.byref(ctx), d), "retain")
            expect(OK, lib.cuDeviceTotalMem_v2(C.byref(tot), d), "totalmem")
            self.ctx.append(ctx)
            self.use(d)
            expect(OK, lib.cuMemGetInfo_v2(C.byref(fr), C.byref(tot)), "meminfo")
            self.total.append(tot.value)
            self.base.append(tot.value - fr.value)
            self.counters[d] = {f: self.zero() for f in FAMS}

    @staticmethod
    def zero():
        return {"allocs": 0, "frees": 0, "failed": 0, "peak_bytes": 0,
                "live_bytes_end": 0}

    def ctr(self, d, fam):
        return self.host[fam] if d < 0 else self.counters[d][fam]

    def alloc(self, d, fam, n):
        c = self.ctr(d, fam)
        c["allocs"] += 1
        c["live_bytes_end"] += n
        c["peak_bytes"] = max(c["peak_bytes"], c["live_bytes_end"])

    def free(self, d, fam, n):
        c = self.ctr(d, fam)
        c["frees"] += 1
        c["live_bytes_end"] -= n

    def fail(self, d, fam):
        self.ctr(d, fam)["failed"] += 1

    def use(self, d):
        expect(OK, self.lib.cuCtxSetCurrent(self.ctx[d]), "cuCtxSetCurrent")

    def probe(self, d):
        fr, tot = sz_t(), sz_t()
        expect(OK, self.lib.cuMemGetInfo_v2(C.byref(fr), C.byref(tot)), "probe")
        live = sum(c["live_bytes_end"] for c in self.counters[d].values())
        if tot.value - fr.value != self.base[d] + live:
            raise Fail(f"device {d}: driver used {tot.value - fr.value}, "
                       f"bookkeeping {self.base[d]} + {live}")
        return fr.value

    def run_pass(self, p):
        L = self.lib
        sfx = "_ptsz" if p else ""
        alloc_async = getattr(L, "cuMemAllocAsync" + sfx)
        pool_async = getattr(L, "cuMemAllocFromPoolAsync" + sfx)
        free_async = getattr(L, "cuMemFreeAsync" + sfx)
        sync = getattr(L, "cuStreamSynchronize" + sfx)
        for d in range(self.ndev):
            k = p * 16 + d
            self.use(d)
            self.probe(d)
            # device family
            a1, a2, a3, p1, pitch = u64(), u64(), u64(), u64(), sz_t()
            s1, s2, s3 = 64 * MiB + 1000 + 7 * k, 3 * MiB + 17 + k, 128 * MiB + 5 + 3 * k
            w, h = 1000 + 8 * d + p, 300 + k
            expect(OK, L.cuMemAlloc_v2(C.byref(a1), sz_t(s1)), "alloc a1")
            self.alloc(d, "device", s1)
            expect(OK, L.cuMemAlloc_v2(C.byref(a2), sz_t(s2)), "alloc a2")
            self.alloc(d, "device", s2)
            expect(OK, L.cuMemAllocPitch_v2(C.byref(p1), C.byref(pitch), sz_t(w),
                                            sz_t(h), 4), "pitch")
            expect((w + 511) // 512 * 512, pitch.value, "pitch value")
            self.alloc(d, "device", pitch.value * h)
            self.probe(d)
            expect(OK, L.cuMemFree_v2(a2), "free a2")
            self.free(d, "device", s2)
            expect(OK, L.cuMemFree_v2(u64(0)), "free 0")
            expect(INVALID_VALUE, L.cuMemFree_v2(a2), "double free")
            self.fail(d, "device")
            expect(INVALID_VALUE, L.cuMemFree_v2(u64(0xdead0000 + d)), "unknown free")
            self.fail(d, "device")
            expect(OK, L.cuMemAlloc_v2(C.byref(a3), sz_t(s3)), "alloc a3")
            self.alloc(d, "device", s3)
            expect(OK, free_async(a3, None), "freeasync a3")
            self.free(d, "device", s3)
            self.probe(d)
            # async family
            b1, b2, b3, b4 = u64(), u64(), u64(), u64()
            defpool, pool = C.c_void_p(), C.c_void_p()
            s1, s2 = 48 * MiB + 123 + k, 5 * MiB + 9 + k
            s3, s4 = 7 * MiB + 11 + k, 9 * MiB + 1 + k
            props = PoolProps(allocType=1, location=Location(1, d))
            expect(OK, alloc_async(C.byref(b1), sz_t(s1), None), "async b1")
            self.alloc(d, "async", s1)
            expect(OK, alloc_async(C.byref(b2), sz_t(s2), PER_THREAD), "async b2")
            self.alloc(d, "async", s2)
            expect(OK, L.cuDeviceGetDefaultMemPool(C.byref(defpool), d), "defpool")
            expect(OK, pool_async(C.byref(b3), sz_t(s3), defpool, LEGACY), "pool b3")
            self.alloc(d, "async", s3)
            expect(OK, L.cuMemPoolCreate(C.byref(pool), C.byref(props)), "poolcreate")
            expect(OK, pool_async(C.byref(b4), sz_t(s4), pool, PER_THREAD), "pool b4")
            self.alloc(d, "async", s4)
            self.probe(d)
            expect(OK, free_async(b2, PER_THREAD), "free b2")
            self.free(d, "async", s2)
            expect(OK, free_async(b3, None), "free b3")
            self.free(d, "async", s3)
            expect(OK, L.cuMemFree_v2(b4), "free b4")
            self.free(d, "async", s4)
            expect(INVALID_VALUE, free_async(u64(0xbad00000 + 512 * d), None), "unknown")
            self.fail(d, "async")
            expect(OK, sync(None), "sync")
            expect(OK, sync(PER_THREAD), "sync ptds")
            expect(OK, L.cuMemPoolDestroy(pool), "pooldestroy")
            self.probe(d)
            # vmm family
            prop = AllocProp(type=1, location=Location(1, d))
            access = AccessDesc(location=Location(1, d), flags=3)
            g = sz_t()
            expect(OK, L.cuMemGetAllocationGranularity(C.byref(g), C.byref(prop), 0), "gran")
            g = g.value
            s1, s2, s3, s4 = (4 + p) * g, (6 + d) * g, (3 + p + d) * g, (5 + k % 3) * g
            va1, va2 = u64(), u64()
            h1, h2, h3, h4 = u64(), u64(), u64(), u64()
            expect(OK, L.cuMemAddressReserve(C.byref(va1), sz_t(s1 + s2 + s3), sz_t(0),
                                             u64(0), u64(0)), "reserve")
            for hh, s in ((h1, s1), (h2, s2), (h3, s3)):
                expect(OK, L.cuMemCreate(C.byref(hh), sz_t(s), C.byref(prop), u64(0)), "create")
                self.alloc(d, "vmm", s)
            expect(OK, L.cuMemMap(va1, sz_t(s1), sz_t(0), h1, u64(0)), "map1")
            expect(OK, L.cuMemMap(u64(va1.value + s1), sz_t(s2), sz_t(0), h2, u64(0)), "map2")
            expect(OK, L.cuMemMap(u64(va1.value + s1 + s2), sz_t(s3), sz_t(0), h3, u64(0)), "map3")
            expect(OK, L.cuMemSetAccess(va1, sz_t(s1 + s2 + s3), C.byref(access), sz_t(1)), "access")
            self.probe(d)
            expect(OK, L.cuMemUnmap(va1, sz_t(s1)), "unmap1")
            expect(OK, L.cuMemRelease(h1), "release1")
            self.free(d, "vmm", s1)
            expect(OK, L.cuMemRelease(h2), "release2")
            self.probe(d)
            expect(OK, L.cuMemUnmap(u64(va1.value + s1), sz_t(s2)), "unmap2")
            self.free(d, "vmm", s2)
            expect(INVALID_VALUE, L.cuMemRelease(h1), "release again")
            self.fail(d, "vmm")
            expect(OK, L.cuMemAddressReserve(C.byref(va2), sz_t(s4), sz_t(0), u64(0), u64(0)), "reserve2")
            expect(OK, L.cuMemCreate(C.byref(h4), sz_t(s4), C.byref(prop), u64(0)), "create4")
            self.alloc(d, "vmm", s4)
            expect(OK, L.cuMemMap(va2, sz_t(s4), sz_t(0), h4, u64(0)), "map4")
            expect(OK, L.cuMemRelease(h4), "release4")
            expect(OK, L.cuMemUnmap(va2, sz_t(s4)), "unmap4")
            self.free(d, "vmm", s4)
            expect(OK, L.cuMemAddressFree(va2, sz_t(s4)), "addressfree")
            self.probe(d)
            # managed family
            m1, m2 = u64(), u64()
            s1, s2 = 12 * MiB + 77 + k, 2 * MiB + 5 + k
            expect(OK, L.cuMemAllocManaged(C.byref(m1), sz_t(s1), 1), "managed1")
            self.alloc(d, "managed", s1)
            expect(OK, L.cuMemAllocManaged(C.byref(m2), sz_t(s2), 1), "managed2")
            self.alloc(d, "managed", s2)
            expect(OK, L.cuMemFree_v2(m1), "free managed")
            self.free(d, "managed", s1)
            self.probe(d)
            # OOMs
            fr = self.probe(d)
            req = fr + GiB + 512 * d + 1 + p
            expect(OOM, L.cuMemAlloc_v2(C.byref(u64()), sz_t(req)), "oom alloc")
            self.fail(d, "device")
            self.ooms.append(("cuMemAlloc_v2", d, req, fr))
            if d == 0:
                req = fr + 3 * GiB + 99 + p
                expect(OOM, alloc_async(C.byref(u64()), sz_t(req), None), "oom async")
                self.fail(d, "async")
                self.ooms.append(("cuMemAllocAsync" + sfx, d, req, fr))
            if d == self.ndev - 1:
                req = ((fr + 2 * GiB) // (2 * MiB) + 1 + p) * 2 * MiB
                expect(OOM, L.cuMemCreate(C.byref(u64()), sz_t(req), C.byref(prop), u64(0)), "oom create")
                self.fail(d, "vmm")
                self.ooms.append(("cuMemCreate", d, req, fr))
            self.probe(d)
        self.host_families(p)
        expect(OK, L.cuCtxSynchronize(), "ctxsync")

    def host_families(self, p):
        L = self.lib
        self.use(0)
        hp1, hp2, hp3 = C.c_void_p(), C.c_void_p(), C.c_void_p()
        s1, s2, s3 = 6 * MiB + 33 + p, MiB + 21 + p, 300000 + p
        huge = (1 << 40) + 7 + p
        r1, r2 = 2 * MiB + 100 + p, 700000 + p
        expect(OK, L.cuMemHostAlloc(C.byref(hp1), sz_t(s1), 0), "hostalloc1")
        self.alloc(-1, "pinned", s1)
        expect(OK, L.cuMemAllocHost_v2(C.byref(hp2), sz_t(s2)), "allochost")
        self.alloc(-1, "pinned", s2)
        expect(OK, L.cuMemHostAlloc(C.byref(hp3), sz_t(s3), 1), "hostalloc3")
        self.alloc(-1, "pinned", s3)
        C.memset(hp1, 0xA5, 4096)
        C.memset(hp2, 0x5A, 64)
        expect(OK, L.cuMemFreeHost(hp1), "freehost")
        self.free(-1, "pinned", s1)
        not_pinned = C.create_string_buffer(64)
        expect(INVALID_VALUE, L.cuMemFreeHost(not_pinned), "freehost unknown")
        self.fail(-1, "pinned")
        expect(OOM, L.cuMemHostAlloc(C.byref(C.c_void_p()), sz_t(huge), 0), "host oom")
        self.fail(-1, "pinned")
        self.ooms.append(("cuMemHostAlloc", -1, huge, -1))
        rb1, rb2 = C.create_string_buffer(r1), C.create_string_buffer(r2)
        self.keep.append(rb2)
        expect(OK, L.cuMemHostRegister_v2(rb1, sz_t(r1), 0), "register1")
        self.alloc(-1, "registered", r1)
        expect(OK, L.cuMemHostRegister_v2(rb2, sz_t(r2), 0), "register2")
        self.alloc(-1, "registered", r2)
        expect(OK, L.cuMemHostUnregister(rb1), "unregister1")
        self.free(-1, "registered", r1)
        expect(NOT_REGISTERED, L.cuMemHostUnregister(rb1), "unregister again")
        self.fail(-1, "registered")

    def expectation(self):
        devices = [{"id": d, "total_bytes": self.total[d], "families": self.counters[d]}
                   for d in range(self.ndev)]
        failures = sum(c["failed"] for d in self.counters.values() for c in d.values())
        failures += sum(c["failed"] for c in self.host.values())
        return {"devices": devices, "host": {"families": self.host},
                "ooms": [{"api": a, "device": d, "requested_bytes": r, "free_bytes": f}
                         for a, d, r, f in self.ooms],
                "failures": failures, "truncated": False}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", type=int, default=0)
    ap.add_argument("--expect")
    args = ap.parse_args()
    lib = C.CDLL("libcuda.so.1")
    ptr_args = {  # arguments that are 64-bit handles or pointers by value
        "cuMemFree_v2": [u64], "cuMemRelease": [u64], "cuMemPoolDestroy": [C.c_void_p],
        "cuMemFreeHost": [C.c_void_p], "cuMemHostUnregister": [C.c_void_p],
        "cuCtxSetCurrent": [C.c_void_p], "cuMemAddressFree": [u64, sz_t],
        "cuMemUnmap": [u64, sz_t], "cuMemHostRegister_v2": [C.c_void_p, sz_t, C.c_uint],
    }
    for name, types in ptr_args.items():
        getattr(lib, name).argtypes = types
    for sfx in ("", "_ptsz"):
        getattr(lib, "cuMemFreeAsync" + sfx).argtypes = [u64, C.c_void_p]
        getattr(lib, "cuMemAllocFromPoolAsync" + sfx).argtypes = [
            C.c_void_p, sz_t, C.c_void_p, C.c_void_p]
        getattr(lib, "cuMemAllocAsync" + sfx).argtypes = [C.c_void_p, sz_t, C.c_void_p]
        getattr(lib, "cuStreamSynchronize" + sfx).argtypes = [C.c_void_p]
    lib.cuMemMap.argtypes = [u64, sz_t, sz_t, u64, u64]
    lib.cuMemSetAccess.argtypes = [u64, sz_t, C.c_void_p, sz_t]
    try:
        w = Workload(lib, args.devices)
        w.run_pass(0)
        w.run_pass(1)
    except Fail as e:
        print(f"client_ctypes: {e}", file=sys.stderr)
        return 1
    if args.expect:
        tmp = args.expect + ".tmp"
        with open(tmp, "w") as f:
            json.dump(w.expectation(), f, indent=1)
        os.replace(tmp, args.expect)
    return 0


if __name__ == "__main__":
    sys.exit(main())
