#!/usr/bin/env python3
"""The HTML report in headless Chromium (suite 'cli'; TAP).

    run_html.py --vramtrace EXE --mktrace EXE --src DIR [--artifacts DIR]

Each report page is opened in Chromium driven through chromedriver (W3C
WebDriver over HTTP on 127.0.0.1; Python's standard library only), its DOM
asserted, and real input played on it: a drag across a chart (brush zoom),
Ctrl + wheel, toolbar buttons, a legend click, a click on a windows-table
row. Screenshots at 1400 and 800 pixels wide are kept under --artifacts
(default: ./artifacts). Skipped when chromium or chromedriver is missing.

What it shows: the page embeds exactly the `--format json` document,
escaped so hostile trace strings stay text; it renders without console
errors; the timeline is cropped to where memory changes and zooms; a
change that lasted one event is drawn, and so is a phase that only a
bucket's range holds; marker labels never overlap and marker colours
differ; the header fits; keys other reports add (wall clock, confidence,
the ladder, the engine's log, findings) are shown, missing ones degrade.
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cli import Tap, mktrace, parse_args, run  # noqa: E402

GiB = 1 << 30
MiB = 1 << 20
DATA_TAG = '<script type="application/json" id="vramtrace-data">'


class WebDriver:
    """One chromedriver and one headless Chromium session."""

    def __init__(self, chromium, chromedriver, tmp):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        self.base = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [chromedriver, f"--port={port}", "--allowed-ips=127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.sid = None
        deadline = time.monotonic() + 20
        while True:
            try:
                self.cmd("GET", "/status")
                break
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.close()
                    raise RuntimeError("chromedriver did not start")
                time.sleep(0.1)
        profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {"binary": chromium, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--hide-scrollbars", "--window-size=1400,1000",
                "--user-data-dir=" + profile]}}}}
        self.sid = self.cmd("POST", "/session", caps)["sessionId"]

    def cmd(self, method, path, body=None):
        if self.sid and not path.startswith("/session") and path != "/status":
            path = f"/session/{self.sid}{path}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data,
                                     method=method, headers={
                                         "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=90) as f:
                return json.loads(f.read())["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path}: {e.read()[:400]!r}")

    def go(self, url):
        self.cmd("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync",
                        {"script": script, "args": list(args)})

    def settle(self, ms=0):
        """Waits ms milliseconds, then two animation frames (the page
        redraws on the next; after a resize, once 150 ms passed)."""
        return self.cmd("POST", "/execute/async", {"script": (
            "var cb = arguments[arguments.length - 1];"
            "setTimeout(function () { requestAnimationFrame(function () {"
            " requestAnimationFrame(function () { cb(1); }); }); },"
            " arguments[0]);"), "args": [ms]})

    def logs(self):
        return self.cmd("POST", "/se/log", {"type": "browser"})

    def size(self, width, height):
        self.cmd("POST", "/window/rect", {"width": width, "height": height})
        self.settle(300)

    def actions(self, sources):
        self.cmd("POST", "/actions", {"actions": sources})
        self.cmd("DELETE", "/actions")

    def drag(self, x0, y, x1, key=None):
        """A mouse drag from (x0, y) to (x1, y), viewport pixels, with a
        modifier key held when key is given."""
        ptr = {"type": "pointer", "id": "mouse",
               "parameters": {"pointerType": "mouse"}, "actions": [
                   {"type": "pause"},
                   {"type": "pointerMove", "duration": 0, "x": int(x0),
                    "y": int(y), "origin": "viewport"},
                   {"type": "pointerDown", "button": 0},
                   {"type": "pointerMove", "duration": 150, "x": int(x1),
                    "y": int(y), "origin": "viewport"},
                   {"type": "pointerUp", "button": 0},
                   {"type": "pause"}]}
        sources = [ptr]
        if key:
            sources.append({"type": "key", "id": "keys", "actions": [
                {"type": "keyDown", "value": key}] + [{"type": "pause"}] * 4
                + [{"type": "keyUp", "value": key}]})
        self.actions(sources)

    def wheel(self, x, y, dy, key):
        """A wheel turn at (x, y) with a modifier key held."""
        keys = {"type": "key", "id": "keys", "actions": [
            {"type": "keyDown", "value": key}, {"type": "pause"},
            {"type": "keyUp", "value": key}]}
        whl = {"type": "wheel", "id": "wheel", "actions": [
            {"type": "pause"},
            {"type": "scroll", "x": int(x), "y": int(y), "deltaX": 0,
             "deltaY": dy, "duration": 0, "origin": "viewport"},
            {"type": "pause"}]}
        self.actions([keys, whl])

    def screenshot(self, path, width):
        """The whole page at this width, as a PNG."""
        self.size(width, 1000)
        self.settle()
        h = self.js("return document.documentElement.scrollHeight")
        self.size(width, min(int(h) + 20, 6000))
        self.js("window.scrollTo(0, 0)")
        self.settle()
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        self.size(1400, 1000)
        self.settle()
        return png

    def close(self):
        try:
            if self.sid:
                self.cmd("DELETE", f"/session/{self.sid}")
        except Exception:
            pass  # the driver is going away anyway
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def embedded(text):
    """The text of the page's data element, and what lies outside it."""
    start = text.find(DATA_TAG)
    if start < 0:
        return "", text
    end = text.find("</script>", start)
    return text[start + len(DATA_TAG):end], text[:start] + text[end:]


def embed(text, doc):
    """text with its data replaced by doc, escaped as the analyzer does."""
    blob = json.dumps(doc, indent=1, ensure_ascii=False)
    for c, e in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        blob = blob.replace(c, e)
    old, _ = embedded(text)
    return text.replace(old, "\n" + blob + "\n", 1)


# Everything the assertions read from a drawn page, in one call.
STATE_JS = r"""
var sec = document.getElementById('timelines');
function box(e) { var b = e.getBoundingClientRect(); return {x: b.left, y: b.top, w: b.width, h: b.height}; }
return {
  rendered: document.body.getAttribute('data-rendered'),
  error: document.body.getAttribute('data-error'),
  view: [+sec.getAttribute('data-view-start'), +sec.getAttribute('data-view-end')],
  svgs: Array.prototype.map.call(document.querySelectorAll('svg.timeline'), function (s) {
    var q = function (sel) { return Array.prototype.slice.call(s.querySelectorAll(sel)); };
    return {
      device: +s.getAttribute('data-device'), W: s.viewBox.baseVal.width,
      left: +s.getAttribute('data-plot-left'), top: +s.getAttribute('data-plot-top'),
      pw: +s.getAttribute('data-plot-width'), ph: +s.getAttribute('data-plot-height'),
      ymax: +s.getAttribute('data-ymax'), box: box(s),
      series: q('path.series').filter(function (p) { return (p.getAttribute('d') || '').length > 10; })
        .map(function (p) { return p.getAttribute('data-phase'); }),
      ranges: q('path.range').map(function (p) { var b = p.getBBox(); return {phase: p.getAttribute('data-phase'), y: b.y, h: b.height}; }),
      labels: q('text.label').map(function (t) { var b = t.getBBox(); return {text: t.textContent, cls: t.getAttribute('class'), x: b.x, y: b.y, w: b.width, h: b.height}; }),
      ooms: q('line.marker.oom').length, ready: q('line.marker.ready').length,
      marks: q('line.marker.mark').length, inflight: q('path.inflight').length,
      colours: ['line.marker.oom', 'line.capacity', 'line.marker.mark', 'line.available', 'line.marker.ready']
        .map(function (sel) { var e = s.querySelector(sel); return e ? getComputedStyle(e).stroke : null; })
    };
  }),
  segs: Array.prototype.map.call(document.querySelectorAll('div.budget div.seg'), function (d) {
    return d.closest('.budget').getAttribute('data-device') + ':' + d.getAttribute('data-phase'); }),
  verdict: (document.querySelector('#diagnosis [data-verdict]') || {getAttribute: function () { return null; }}).getAttribute('data-verdict'),
  pwned: typeof window.pwned,
  tags: ['img', 'b', 'iframe'].map(function (t) { return document.getElementsByTagName(t).length; }),
  command: document.getElementById('command').textContent,
  overflow: document.documentElement.scrollWidth - window.innerWidth,
  headerOverflow: document.querySelector('header').scrollWidth - document.querySelector('header').clientWidth,
  windows: Array.prototype.map.call(document.querySelectorAll('tr.window'), function (r) {
    return {start: +r.getAttribute('data-start'), end: +r.getAttribute('data-end')}; }),
  text: document.body.innerText
};
"""

# The elements under a point of device d's chart, at time t and bytes b.
HIT_JS = r"""
var s = document.querySelector('svg.timeline[data-device="' + arguments[0] + '"]');
s.scrollIntoView({block: 'center'});  /* elementsFromPoint sees the viewport only */
var L = +s.getAttribute('data-plot-left'), pw = +s.getAttribute('data-plot-width');
var top = +s.getAttribute('data-plot-top'), ph = +s.getAttribute('data-plot-height'), ymax = +s.getAttribute('data-ymax');
var t0 = +s.getAttribute('data-view-start'), t1 = +s.getAttribute('data-view-end');
var ncol = Math.max(1, Math.floor(pw / 2)), colw = pw / ncol;
var x = L + pw * (arguments[1] - t0) / (t1 - t0);
x = L + (Math.floor((x - L) / colw) + 0.5) * colw;
var y = top + ph - ph * arguments[2] / ymax;
var r = s.getBoundingClientRect(), k = r.width / s.viewBox.baseVal.width;
return document.elementsFromPoint(r.left + x * k, r.top + y * k).map(function (e) {
  return (e.getAttribute('class') || e.tagName) + ':' + (e.getAttribute('data-phase') || ''); });
"""


def overlaps(labels):
    bad = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            if a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and \
                    a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]:
                bad.append((a["text"], b["text"]))
    return bad


def console_errors(logs):
    """Console messages but the report's own "drawn" line."""
    return [e for e in logs
            if '"vramtrace report: ' not in e.get("message", "")]


def check_page(opts, tap, wd, tmp, script, args):
    """Writes the report of the trace in tmp, opens it, asserts the DOM
    against the JSON report. Returns (page path, page text, report,
    state) or None when the page could not be written."""
    name = script[:-4] if script.endswith(".mkt") else script
    page = os.path.join(tmp, name + ".html")
    rc, out, err = run([opts.vramtrace, "analyze", "-f", "html", "-o", page]
                       + args, tmp)
    rc2, out2, _ = run([opts.vramtrace, "analyze", "-f", "json"] + args, tmp)
    rep = json.loads(out2)
    text = open(page, encoding="utf-8").read() if rc == 0 else ""
    blob, rest = embedded(text)
    try:
        data = json.loads(blob)
    except ValueError as e:
        data = {"error": str(e)}
    # (the SVG namespace is a name, not a fetch)
    rest = rest.replace("'http://www.w3.org/2000/svg'", "")
    external = [m for m in ("src=", "<link rel=\"stylesheet", "@import",
                            "url(http", "https://", "http://", "fetch(",
                            "XMLHttpRequest", "<iframe", "<object")
                if m in rest]
    raw = [c for c in "<>&\u2028\u2029" if c in blob]
    tap.ok(rc == 0 and data == rep and not raw and not external,
           f"html {name}: one self-contained page embedding the JSON "
           "report, escaped", f"exit {rc}\n{err}\nraw {raw}\nexternal "
           f"{external}\nsame {data == rep}")
    if rc != 0:
        return None
    wd.go("file://" + page)
    wd.settle()
    st = wd.js(STATE_JS)
    errs = console_errors(wd.logs())
    tap.ok(st["rendered"] == "ok" and not st["error"] and not errs,
           f"html {name}: renders in Chromium without console errors",
           f"rendered {st['rendered']} error {st['error']}\n{errs}")
    missing = []
    for d in rep["devices"]:
        used = sorted(k for k, v in d["phases"].items()
                      if v["allocs"] or v["frees"] or v["peak_bytes"])
        if not used:
            continue
        svgs = [s for s in st["svgs"] if s["device"] == d["id"]]
        if len(svgs) != 1 or sorted(svgs[0]["series"]) != used:
            missing.append((d["id"], used, svgs[0]["series"] if svgs
                            else None))
        at_peak = {f"{d['id']}:{k}" for k, v in d["peak"]["by_phase"].items()
                   if v}
        if not at_peak <= set(st["segs"]):
            missing.append((d["id"], "budget", at_peak))
    tap.ok(not missing, f"html {name}: a series per device and phase, "
           "budget segments", missing)
    # Markers, in the view (the whole run, for these checks).
    wd.js("document.querySelector('button[data-act=\"all\"]').click()")
    wd.settle()
    whole = wd.js(STATE_JS)
    drawn = [s for s in whole["svgs"]]
    n_ooms = sum(1 for o in rep["ooms"] for s in drawn
                 if o["device"] in (s["device"], -1))
    has_req = rep["requests"]["connections"] > 0 or \
        rep["requests"]["annotated"] > 0
    tap.ok(sum(s["ooms"] for s in drawn) == n_ooms and
           all(s["ready"] == (rep["server_ready_s"] is not None)
               for s in drawn) and
           all(s["marks"] == len(rep["marks"]) for s in drawn) and
           all(bool(s["inflight"]) == bool(has_req) for s in drawn) and
           (rep["diagnosis"] is None or
            whole["verdict"] == rep["diagnosis"]["verdict"]),
           f"html {name}: OOM, ready, mark and in-flight markers, the "
           "diagnosis", [(s["ooms"], s["ready"], s["marks"], s["inflight"])
                         for s in drawn])
    bad = []
    for s in drawn + st["svgs"]:
        bad += overlaps(s["labels"])
        bad += [lab["text"] for lab in s["labels"]
                if lab["x"] < 0 or lab["x"] + lab["w"] > s["W"] + 0.5]
        bad += [lab["text"] for lab in s["labels"]
                if "oom" in lab["cls"] and not lab["text"].startswith("OOM ")]
    tap.ok(not bad, f"html {name}: marker labels whole, inside the chart "
           "and apart", bad)
    return page, text, rep, st


def group(opts, tap, chromium, chromedriver):
    artifacts = opts.artifacts or os.path.join(os.getcwd(), "artifacts")
    os.makedirs(artifacts, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        wd = WebDriver(chromium, chromedriver, tmp)
        try:
            pages(opts, tap, wd, tmp, artifacts)
        finally:
            wd.close()


def fresh(opts, tmp, script):
    shutil.rmtree(os.path.join(tmp, "run"), ignore_errors=True)
    mktrace(opts, script, tmp)


def pages(opts, tap, wd, tmp, artifacts):
    for script, args in (("phases.mkt", ["run"]), ("multi.mkt", ["run"]),
                         ("basic.mkt", ["run"]), ("standby.mkt", ["run"]),
                         ("verdict-recovered.mkt", ["runN"])):
        fresh(opts, tmp, script)
        check_page(opts, tap, wd, tmp, script, args)

    # Hostile strings: a mark label and a command line that try to close
    # the data's script element, '&', '>' and U+2028, markup in a device
    # name and a frame name.
    for script in ("html.mkt", "spike.mkt"):
        fresh(opts, tmp, script)
        got = check_page(opts, tap, wd, tmp, script, ["run"])
        if not got:
            continue
        page, text, rep, st = got
        root = rep["run"]["processes"][0]["cmdline"]
        tap.ok(st["pwned"] == "undefined" and st["tags"] == [0, 0, 0] and
               all(a in st["command"] for a in root) and
               ("</script>" in st["text"]),
               f"html {script[:-4]}: trace strings stay text",
               f"pwned {st['pwned']} tags {st['tags']} command "
               f"{st['command']!r}")
    spike_checks(opts, tap, wd, tmp, artifacts)
    dense_checks(opts, tap, wd, tmp, artifacts)
    windows_checks(opts, tap, wd, tmp, artifacts)


def view(wd):
    wd.settle()
    return wd.js(STATE_JS)


def spike_checks(opts, tap, wd, tmp, artifacts):
    """spike.mkt: loads, serves, runs out of memory at 12 s, idles for an
    hour. One request's 2 GiB lives 1 us (the device's peak, at 10 s)."""
    fresh(opts, tmp, "spike.mkt")
    page = os.path.join(tmp, "spike.html")
    run([opts.vramtrace, "analyze", "-f", "html", "-o", page, "run"], tmp)
    rc, out, _ = run([opts.vramtrace, "analyze", "-f", "json", "run"], tmp)
    rep = json.loads(out)
    dur = rep["run"]["duration_s"]
    peak = rep["devices"][0]["peak"]
    wd.go("file://" + page)
    st = view(wd)
    v0, v1 = st["view"]
    tap.ok(v0 == 0 and 12 < v1 < 20 and dur > 3600,
           "html spike: the view is cropped to where memory changes "
           "(not the idle hour)", st["view"])

    def spike_hit(what):
        hits = wd.js(HIT_JS, 0, peak["time_s"], peak["tracked_bytes"] -
                     0.5 * GiB)
        tap.ok("series:forward" in hits, f"html spike: the 1-event peak is "
               f"drawn ({what})", hits)
    spike_hit("cropped view")
    wd.js("document.querySelector('button[data-act=\"all\"]').click()")
    st = view(wd)
    tap.ok(st["view"] == [0, dur], "html spike: Whole run shows all of it",
           st["view"])
    spike_hit("whole run: 1 us in an hour")
    # A drag across the chart zooms into that span.
    wd.js("document.querySelector('button[data-act=\"fit\"]').click()")
    st = view(wd)
    s = st["svgs"][0]
    v0, v1 = st["view"]
    k = s["box"]["w"] / s["W"]
    y = s["box"]["y"] + (s["top"] + s["ph"] / 2) * k
    xa = s["box"]["x"] + (s["left"] + s["pw"] * 0.25) * k
    xb = s["box"]["x"] + (s["left"] + s["pw"] * 0.5) * k
    wd.js("arguments[0].scrollIntoView({block: 'center'})",
          wd.js("return document.querySelector('svg.timeline')"))
    st = view(wd)
    s = st["svgs"][0]
    y = s["box"]["y"] + (s["top"] + s["ph"] / 2) * k
    wd.drag(xa, y, xb)
    st = view(wd)
    want = (v0 + (v1 - v0) * 0.25, v0 + (v1 - v0) * 0.5)
    tol = (v1 - v0) * 0.01
    tap.ok(abs(st["view"][0] - want[0]) < tol and
           abs(st["view"][1] - want[1]) < tol,
           "html spike: a drag across the chart zooms to that span",
           f"{st['view']} want {want}")
    # Ctrl + wheel zooms in around the pointer.
    b0, b1 = st["view"]
    s = st["svgs"][0]
    xm = s["box"]["x"] + (s["left"] + s["pw"] * 0.5) * k
    wd.wheel(xm, y, -400, "\ue009")
    st = view(wd)
    c0, c1 = st["view"]
    mid = (b0 + b1) / 2
    tap.ok(c1 - c0 < (b1 - b0) * 0.9 and c0 < mid < c1 and
           abs((c0 + c1) / 2 - mid) < (b1 - b0) * 0.02,
           "html spike: Ctrl + wheel zooms in around the pointer",
           f"{[b0, b1]} -> {[c0, c1]}")
    # Shift + drag pans: the span stays, it moves by what was dragged.
    b0, b1 = st["view"]
    s = st["svgs"][0]
    xa = s["box"]["x"] + (s["left"] + s["pw"] * 0.6) * k
    xb = s["box"]["x"] + (s["left"] + s["pw"] * 0.4) * k
    wd.drag(xa, y, xb, "\ue008")
    st = view(wd)
    c0, c1 = st["view"]
    shift = (b1 - b0) * 0.2
    tap.ok(abs((c1 - c0) - (b1 - b0)) < (b1 - b0) * 1e-6 and
           abs(c0 - (b0 + shift)) < (b1 - b0) * 0.01,
           "html spike: Shift + drag pans", f"{[b0, b1]} -> {[c0, c1]}")
    # Dragging the overview's window pans too.
    ov = wd.js("var r = document.querySelector('#overview rect.window')"
               ".getBoundingClientRect(); arguments[0].scrollIntoView();"
               "r = document.querySelector('#overview rect.window')"
               ".getBoundingClientRect();"
               "var o = document.querySelector('#overview svg')"
               ".getBoundingClientRect();"
               "return [r.left + r.width / 2, r.top + r.height / 2, o.width];",
               wd.js("return document.getElementById('overview')"))
    wd.drag(ov[0], ov[1], ov[0] + 100)
    st = view(wd)
    d0, d1 = st["view"]
    tap.ok(abs((d1 - d0) - (c1 - c0)) < (c1 - c0) * 1e-6 and d0 > c0 + 10,
           "html spike: dragging the overview's window pans",
           f"{[c0, c1]} -> {[d0, d1]}")
    # The legend hides and shows a phase.
    wd.js("document.querySelector('#legend button[data-phase=\"forward\"]')"
          ".click()")
    hidden = view(wd)["svgs"][0]["series"]
    wd.js("document.querySelector('#legend button[data-phase=\"forward\"]')"
          ".click()")
    shown = view(wd)["svgs"][0]["series"]
    tap.ok("forward" not in hidden and "forward" in shown,
           "html spike: a legend click hides and shows a phase",
           f"{hidden} / {shown}")
    wd.js("document.querySelector('button[data-act=\"fit\"]').click()")
    st = view(wd)
    s = st["svgs"][0]
    tap.ok(len(set(s["colours"])) == len(s["colours"]) and
           None not in s["colours"],
           "html spike: OOM, capacity, mark, what was left and ready in "
           "distinct colours", s["colours"])
    marks = [lab for lab in s["labels"] if "mark" in lab["cls"]]
    tap.ok(len(marks) == 2 and not overlaps(s["labels"]),
           "html spike: labels of marks 5 ms apart both shown, apart",
           s["labels"])
    for width in (1400, 800):
        png = os.path.join(artifacts, f"spike-{width}.png")
        wd.screenshot(png, width)
        wd.size(width, 1000)
        st = view(wd)
        wd.size(1400, 1000)
        tap.ok(os.path.getsize(png) > 10000 and st["overflow"] <= 0 and
               st["headerOverflow"] <= 0,
               f"html spike: fits {width} px (header too), screenshot "
               f"{png}", f"overflow {st['overflow']} header "
               f"{st['headerOverflow']}")
    future_keys(opts, tap, wd, tmp, artifacts, page, rep)


def future_keys(opts, tap, wd, tmp, artifacts, page, rep):
    """Keys other parts of vramtrace add to the report are shown (wall
    clock, confidence, the ladder, fatal OOMs, the engine's log,
    findings); a report without the optional sections still renders."""
    text = open(page, encoding="utf-8").read()
    doc = json.loads(json.dumps(rep))

    def drop_utc(x):
        # Times from run.start_utc alone: the keys' own *_utc go.
        if isinstance(x, dict):
            for k in [k for k in x if k.endswith("_utc")]:
                del x[k]
            for v in x.values():
                drop_utc(v)
        elif isinstance(x, list):
            for v in x:
                drop_utc(v)

    drop_utc(doc)
    doc["run"]["start_utc"] = "2023-11-14T22:13:20.250000Z"
    dg = doc["diagnosis"]
    dg["confidence"] = "medium"
    dg["confidence_reason"] = "the engine's log was not found"
    dg["rung"] = "requests in flight"
    dg["ladder"] = [
        {"rung": "baseline", "bytes": GiB, "cumulative_bytes": GiB,
         "fits": True},
        {"rung": "weights", "bytes": 14 * GiB,
         "cumulative_bytes": 15 * GiB, "fits": True},
        {"rung": "reserves", "bytes": 6 * GiB,
         "cumulative_bytes": 21 * GiB, "fits": True},
        {"rung": "requests in flight", "bytes": 4 * GiB,
         "cumulative_bytes": 25 * GiB, "fits": False}]
    doc["ooms"][0]["fatal"] = False
    doc["ooms"][0]["recovered_by"] = {"time_s": 12.5, "api": "cuMemAlloc_v2",
                                      "bytes": 4 * GiB,
                                      "freed_bytes": 2 * GiB}
    doc["engine_log"] = {"engine": "vllm", "path": "output.log",
                         "weights_bytes": 14 * GiB, "kv_cache_tokens": 41216,
                         "lines": [{"time_s": 2.5, "text": "KV cache "
                                    "<b>size</b>: 41216 tokens"}]}
    doc["findings"] = [{"severity": "warning", "text": "the engine's log "
                        "says 13.9 GiB of weights, the trace 14.0 GiB"}]
    future = os.path.join(tmp, "future.html")
    with open(future, "w", encoding="utf-8") as f:
        f.write(embed(text, doc))
    wd.go("file://" + future)
    st = view(wd)
    got = wd.js("""
      return {
        utc: Array.prototype.map.call(document.querySelectorAll('svg.timeline text.utc'), function (t) { return t.textContent; }),
        chips: document.getElementById('summary').innerText,
        ladder: document.querySelectorAll('table.ladder tr').length,
        broke: Array.prototype.map.call(document.querySelectorAll('table.ladder tr.broke td:first-child'), function (t) { return t.textContent; }),
        conf: document.querySelectorAll('#diagnosis .badge.conf').length,
        log: document.getElementById('engine-log').hidden ? '' : document.getElementById('engine-log').innerText,
        findings: document.getElementById('findings').hidden ? '' : document.getElementById('findings').innerText,
        ooms: document.getElementById('ooms').innerText,
        bold: document.querySelectorAll('#engine-log b').length
      };""")
    errs = console_errors(wd.logs())
    tap.ok(st["rendered"] == "ok" and not errs and
           "started 2023-11-14 22:13:20 UTC" in got["chips"] and
           any(u.startswith("22:13:") for u in got["utc"]) and
           "22:13:20.250 UTC" in st["text"],
           "html future keys: wall-clock times from run.start_utc",
           f"{got['chips']!r} {got['utc'][:3]} {errs}")
    tap.ok(got["ladder"] == 5 and got["broke"] == ["requests in flight"] and
           got["conf"] == 1 and
           "the engine's log was not found" in st["text"] and
           "recovered at 12.500 s by cuMemAlloc_v2 of 4.00 GiB after "
           "2.00 GiB freed" in got["ooms"],
           "html future keys: confidence, the ladder, recovered OOMs", got)
    tap.ok("41216" in got["log"] and "14.00 GiB" in got["log"] and
           "<b>size</b>" in got["log"] and got["bold"] == 0 and
           "13.9 GiB" in got["findings"],
           "html future keys: the engine's log and findings, as text",
           got["log"][:300])
    wd.screenshot(os.path.join(artifacts, "future-keys-1400.png"), 1400)
    for key in ("timeline", "windows", "listen", "top_sites", "diagnosis",
                "requests", "run"):
        doc.pop(key, None)
    bare = os.path.join(tmp, "bare.html")
    with open(bare, "w", encoding="utf-8") as f:
        f.write(embed(text, doc))
    wd.go("file://" + bare)
    st = view(wd)
    errs = console_errors(wd.logs())
    tap.ok(st["rendered"] == "ok" and not st["error"] and not errs,
           "html: a report without its optional sections still renders",
           f"{st['rendered']} {st['error']} {errs}")


def dense_checks(opts, tap, wd, tmp, artifacts):
    """An hour-long load test: the timeline's buckets widen to about 4 s,
    so the profiling run's 512 MiB (freed 1 us later, before the KV cache
    in the same bucket) is in no point; the bucket's range draws it."""
    fresh(opts, tmp, "dense")
    got = check_page(opts, tap, wd, tmp, "dense", ["run"])
    if not got:
        return
    page, text, rep, st = got
    tl = rep["timeline"]["devices"][0]
    in_points = max(tl["points"]["by_phase"]["profile"])
    in_ranges = max(tl["buckets"]["max_by_phase"]["profile"])
    wd.go("file://" + page)
    st = view(wd)
    s = st["svgs"][0]
    prof = [r for r in s["ranges"] if r["phase"] == "profile"]
    want = 512 * MiB * s["ph"] / s["ymax"]
    hits = wd.js(HIT_JS, 0, 2.0, 20 * GiB + 384 * MiB)
    tap.ok(in_points == 0 and in_ranges == 512 * MiB and
           rep["timeline"]["bucket_s"] > 1 and len(prof) == 1 and
           abs(prof[0]["h"] - want) < 1.5 and "range:profile" in hits,
           "html dense: a phase only a bucket's range holds is drawn",
           f"points {in_points} ranges {in_ranges} bucket "
           f"{rep['timeline']['bucket_s']} drawn {prof} want {want:.1f} "
           f"hits {hits}")
    wd.screenshot(os.path.join(artifacts, "dense-1400.png"), 1400)
    wd.js("document.querySelector('button[data-mode=\"lines\"]').click()")
    st = view(wd)
    s = st["svgs"][0]
    band = [r for r in s["ranges"] if r["phase"] == "profile"]
    tap.ok(sorted(s["series"]) == sorted(tl["points"]["by_phase"]) and
           len(band) == 1 and abs(band[0]["h"] - 512 * MiB * s["ph"] /
                                  s["ymax"]) < 1.5,
           "html dense: Lines draws each phase with its least-to-most band",
           f"{s['series']} {band}")
    wd.screenshot(os.path.join(artifacts, "dense-lines-1400.png"), 1400)


def windows_checks(opts, tap, wd, tmp, artifacts):
    """windows.mkt: a concurrency ladder with a mark per step."""
    fresh(opts, tmp, "windows.mkt")
    got = check_page(opts, tap, wd, tmp, "windows.mkt", ["run"])
    if not got:
        return
    page, text, rep, st = got
    want = [(w["start_s"], w["end_s"]) for w in rep["windows"]]
    tap.ok([(w["start"], w["end"]) for w in st["windows"]] == want,
           "html windows: a row per window", st["windows"])
    wd.js("document.querySelectorAll('tr.window')[1].click()")
    st = view(wd)
    a, b = want[1]
    pad = (b - a) * 0.03
    tap.ok(abs(st["view"][0] - (a - pad)) < 1e-6 and
           abs(st["view"][1] - (b + pad)) < 1e-6,
           "html windows: clicking a row shows its span", st["view"])
    wd.screenshot(os.path.join(artifacts, "windows-1400.png"), 1400)


def main():
    opts = parse_args(lambda ap: ap.add_argument("--artifacts"))
    chromium = next((shutil.which(n) for n in
                     ("chromium", "chromium-browser", "google-chrome")
                     if shutil.which(n)), None)
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        print("1..0 # SKIP chromium or chromedriver not installed")
        return 0
    tap = Tap()
    group(opts, tap, chromium, chromedriver)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
