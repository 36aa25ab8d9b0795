# pystack.c called through ctypes (GIL released) from the python that runs
# this script, whether libpython is a shared library or linked into the
# executable. Usage: ctypes_probe.py PROBE.so. TAP output.
import ctypes
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
lib.vrt_probe.restype = ctypes.c_int
results = {}


def inner(key):
    buf = ctypes.create_string_buffer(8192)
    n = lib.vrt_probe(buf, len(buf))
    results[key] = (n, buf.value.decode().split("|")[:-1])


class Loader:
    def load(self, key):
        inner(key)


Loader().load("main")
t = threading.Thread(target=Loader().load, args=("thread",))
t.start()
t.join()

qual = sys.version_info >= (3, 11)
want = ["inner %s:15" % __file__,
        ("Loader.load" if qual else "load") + " %s:21" % __file__]
checks = [
    ("interpreter found", results["main"][0] > 0),
    ("main thread frames", results["main"][1] == want +
     ["<module> %s:24" % __file__]),
    ("second thread frames", results["thread"][1][:2] == want),
]
print("# python %s" % sys.version.split()[0])
for key in results:
    for frame in results[key][1]:
        print("# %s: %s" % (key, frame))
for i, (what, good) in enumerate(checks, 1):
    print("%sok %d - %s" % ("" if good else "not ", i, what))
print("1..%d" % len(checks))
