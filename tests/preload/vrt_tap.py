"""vrt_tap.py — what the preload tests written as TAP share (python3
stdlib only): the Tap reporter and a bounded poll. Imported by the test
scripts of this directory (they run with it as their own directory)."""
import sys
import time


class Tap:
    """Numbered "ok N - name" lines; a failure's detail as # lines."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        print(("ok" if cond else "not ok") + f" {self.n} - {name}")
        if not cond:
            self.failed += 1
            for line in str(detail).splitlines():
                print(f"# {line}")
        sys.stdout.flush()
        return cond

    def note(self, msg):
        for line in str(msg).splitlines():
            print(f"# {line}")
        sys.stdout.flush()

    def done(self):
        """The plan line; the exit status."""
        print(f"1..{self.n}")
        return 1 if self.failed else 0


def poll(fn, tries=150, delay=0.1):
    """fn() until it returns a true value, at most tries times."""
    for _ in range(tries):
        v = fn()
        if v:
            return v
        time.sleep(delay)
    return None
