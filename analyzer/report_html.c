/*
 * report_html.c — one self-contained HTML page: inline CSS, inline
 * JavaScript and SVG drawn by it, nothing fetched from anywhere (no fonts,
 * no scripts, no icons), so the file can be mailed, attached to a ticket
 * or opened on an air-gapped machine.
 *
 * The C side only serialises numbers: it writes one JSON document (the
 * devices with their downsampled timelines from replay.c, requests in
 * flight, marks, failures, top sites with their frames, the diagnosis)
 * into a <script type="application/json"> element, and the page's script
 * draws everything from it with DOM calls (textContent, never innerHTML of
 * trace strings, so a trace cannot inject markup). In the embedded JSON
 * every '<' is written as \u003c: it can then never close the script
 * element ("</script>") or open a comment ("<!--"), whatever the strings
 * of the trace hold. Outside strings JSON has no '<', so the escape is
 * exact.
 *
 * The page names what tests look for: section ids (#timelines, #budgets,
 * #diagnosis, #enginelog, #failures, #sites), per device svg.timeline[data-device]
 * with path.series[data-phase] (one per phase), path.inflight, and
 * line.marker.ready / .mark / .oom; div.budget[data-device] with
 * div.seg[data-phase]; body[data-rendered] set once drawing finished
 * ("ok") and body[data-error] set by any script error.
 */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "logcheck.h"
#include "wallclock.h"

/* Frames kept per site in the page (innermost first). */
#define HTML_SITE_FRAMES 64

/* ---- the page ------------------------------------------------------------ */

/* Everything before the data: markup, CSS. */
static const char page_head[] =
        "<!DOCTYPE html>\n"
        "<html lang=\"en\">\n"
        "<head>\n"
        "<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"vramtrace\">\n"
        "<link rel=\"icon\" href=\"data:,\">\n"
        "<title>vramtrace report</title>\n"
        "<style>\n"
        ":root { --fg: #1d232b; --muted: #5f6b7a; --line: #d9dee5; --bg: #ffffff; --panel: #f6f8fa; --oom: #d62728; --ready: #2ca02c; --mark: #7f7f7f; }\n"
        "* { box-sizing: border-box; }\n"
        "body { margin: 0; font: 14px/1.45 system-ui, -apple-system, \"Segoe UI\", Roboto, \"Helvetica Neue\", Arial, sans-serif; color: var(--fg); background: var(--bg); }\n"
        "header { padding: 16px 24px 8px; border-bottom: 1px solid var(--line); background: var(--panel); }\n"
        "h1 { font-size: 20px; margin: 0 0 4px; }\n"
        "h2 { font-size: 16px; margin: 0 0 10px; }\n"
        "h3 { font-size: 14px; margin: 14px 0 6px; }\n"
        "main { padding: 8px 24px 32px; }\n"
        "section { margin: 18px 0 8px; }\n"
        ".muted { color: var(--muted); }\n"
        ".cmd { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; overflow-wrap: anywhere; }\n"
        ".summary span { margin-right: 18px; white-space: nowrap; }\n"
        "#legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 0 0 6px; }\n"
        ".key { display: inline-flex; align-items: center; gap: 6px; font-size: 13px; }\n"
        ".sw { display: inline-block; width: 12px; height: 12px; border-radius: 2px; flex: none; }\n"
        ".sw.line { height: 0; border-top: 2px dashed; border-radius: 0; }\n"
        ".device { margin: 0 0 18px; }\n"
        "svg.timeline { display: block; width: 100%; font-size: 11px; }\n"
        "svg text { fill: var(--muted); }\n"
        "svg .axis line, svg .grid line { stroke: var(--line); }\n"
        "svg .axis path { stroke: #9aa5b1; }\n"
        "svg path.series { stroke: none; }\n"
        "svg path.total { fill: none; stroke: #1d232b; stroke-opacity: .55; stroke-width: 1; }\n"
        "svg path.inflight { fill: #9467bd; fill-opacity: .25; stroke: #9467bd; stroke-width: 1.2; }\n"
        "svg line.marker { stroke-width: 1.2; }\n"
        "svg line.marker.ready { stroke: var(--ready); stroke-dasharray: 5 3; }\n"
        "svg line.marker.mark { stroke: var(--mark); stroke-dasharray: 2 3; }\n"
        "svg line.marker.oom { stroke: var(--oom); stroke-width: 1.6; }\n"
        "svg text.oom { fill: var(--oom); font-weight: 600; }\n"
        "svg text.ready { fill: var(--ready); }\n"
        "svg text.mark { fill: #555; font-size: 10.5px; }\n"
        "svg line.capacity { stroke: var(--oom); stroke-dasharray: 7 4; stroke-width: 1.2; }\n"
        "svg line.available { stroke: #e377c2; stroke-dasharray: 3 3; stroke-width: 1.2; }\n"
        "svg text.capacity { fill: var(--oom); }\n"
        "svg circle.peak { fill: #fff; stroke: #1d232b; stroke-width: 1.5; }\n"
        "svg line.cursor { stroke: #1d232b; stroke-width: 1; pointer-events: none; }\n"
        "svg rect.hover { fill: transparent; cursor: crosshair; }\n"
        "#tooltip { position: fixed; z-index: 10; pointer-events: none; background: rgba(29,35,43,.94); color: #fff; padding: 6px 9px; border-radius: 4px; font-size: 12px; line-height: 1.4; max-width: 340px; }\n"
        "#tooltip table { border-collapse: collapse; }\n"
        "#tooltip td { padding: 0 6px 0 0; }\n"
        "#tooltip td.num { text-align: right; }\n"
        ".budget { margin: 0 0 14px; }\n"
        ".budget .label { display: flex; justify-content: space-between; gap: 12px; margin-bottom: 3px; }\n"
        ".bar { display: flex; height: 22px; border: 1px solid #b8c0ca; border-radius: 3px; overflow: hidden; background: repeating-linear-gradient(45deg, #fff, #fff 4px, #f1f3f5 4px, #f1f3f5 8px); }\n"
        ".seg { height: 100%; min-width: 0; }\n"
        ".seg.baseline { background: repeating-linear-gradient(45deg, #8a8f96, #8a8f96 3px, #b5b9be 3px, #b5b9be 6px); }\n"
        "table.data { border-collapse: collapse; width: 100%; font-size: 13px; }\n"
        "table.data th, table.data td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }\n"
        "table.data th { background: var(--panel); font-weight: 600; }\n"
        "table.data td.num, table.data th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }\n"
        "table.data tr.oom td { background: #fdecea; }\n"
        "p.finding { color: var(--oom); }\n"
        "details summary { cursor: pointer; }\n"
        "pre.stack { margin: 4px 0 2px; padding: 6px 8px; background: var(--panel); border-radius: 3px; font-size: 12px; overflow-x: auto; }\n"
        ".verdict { display: inline-block; padding: 2px 10px; border-radius: 12px; font-weight: 700; color: #fff; background: var(--oom); margin-right: 8px; }\n"
        ".verdict.none { background: var(--ready); }\n"
        ".diag { border: 1px solid var(--line); border-left: 4px solid var(--oom); border-radius: 4px; padding: 10px 14px; background: #fff; }\n"
        ".diag.none { border-left-color: var(--ready); }\n"
        ".diag h4 { margin: 10px 0 2px; font-size: 13px; }\n"
        ".diag ul { margin: 2px 0; padding-left: 20px; }\n"
        ".note { color: var(--muted); font-style: italic; }\n"
        "</style>\n"
        "</head>\n"
        "<body>\n"
        "<header>\n"
        "<h1>vramtrace report</h1>\n"
        "<div id=\"run\" class=\"muted\"></div>\n"
        "</header>\n"
        "<main>\n"
        "<noscript><p>This report draws itself with JavaScript; its numbers are in the <code>vramtrace-data</code> element of the page source.</p></noscript>\n"
        "<section id=\"diagnosis\"><h2>Diagnosis</h2><div class=\"body\"></div></section>\n"
        "<section id=\"enginelog\"><h2>The engine's log</h2><div class=\"body\"></div></section>\n"
        "<section id=\"timelines\"><h2>Live GPU memory by phase</h2><div id=\"legend\"></div><div class=\"body\"></div></section>\n"
        "<section id=\"budgets\"><h2>Budget at each device's peak</h2><div class=\"body\"></div></section>\n"
        "<section id=\"failures\"><h2>Failed calls</h2><div class=\"body\"></div></section>\n"
        "<section id=\"sites\"><h2>Top allocation sites at each device's peak</h2><div class=\"body\"></div></section>\n"
        "<section id=\"processes\"><h2>Processes</h2><div class=\"body\"></div></section>\n"
        "</main>\n"
        "<div id=\"tooltip\" hidden></div>\n"
        "<script type=\"application/json\" id=\"vramtrace-data\">\n";

/* Everything after the data: the script that draws the page. */
static const char page_tail[] =
        "</script>\n"
        "<script>\n"
        "(function () {\n"
        "  'use strict';\n"
        "  var body = document.body;\n"
        "  window.addEventListener('error', function (ev) {\n"
        "    body.setAttribute('data-error', String(ev.message || ev));\n"
        "  });\n"
        "  var SVGNS = 'http://www.w3.org/2000/svg';\n"
        "  var COLORS = {\n"
        "    'weights': '#4e79a7', 'kv_cache': '#f28e2b', 'kv_cache (inferred)': '#ffbe7d',\n"
        "    'forward': '#59a14f', 'profile': '#edc948', 'cuda_graph': '#b07aa1',\n"
        "    'comm': '#76b7b2', 'workspace': '#ff9da7', 'unattributed': '#a5a5a5'\n"
        "  };\n"
        "  var EXTRA = ['#8cd17d', '#d37295', '#a0cbe8', '#b6992d', '#499894', '#e15759', '#d4a6c8', '#86bcb6', '#9d7660', '#79706e'];\n"
        "  var nextExtra = 0;\n"
        "  /* Bottom to top: what stays resident first, per-request memory last. */\n"
        "  var ORDER = ['weights', 'kv_cache', 'kv_cache (inferred)', 'cuda_graph', 'comm', 'workspace', 'profile', 'forward'];\n"
        "\n"
        "  function color(name) {\n"
        "    if (!Object.prototype.hasOwnProperty.call(COLORS, name)) {\n"
        "      COLORS[name] = EXTRA[nextExtra++ % EXTRA.length];\n"
        "    }\n"
        "    return COLORS[name];\n"
        "  }\n"
        "  function rank(name) {\n"
        "    if (name === 'unattributed') return 1000;\n"
        "    var i = ORDER.indexOf(name);\n"
        "    return i < 0 ? 500 : i;\n"
        "  }\n"
        "  function el(tag, attrs, text) {\n"
        "    var e = document.createElement(tag);\n"
        "    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);\n"
        "    if (text !== undefined && text !== null) e.textContent = String(text);\n"
        "    return e;\n"
        "  }\n"
        "  function sv(tag, attrs, text) {\n"
        "    var e = document.createElementNS(SVGNS, tag);\n"
        "    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);\n"
        "    if (text !== undefined && text !== null) e.textContent = String(text);\n"
        "    return e;\n"
        "  }\n"
        "  function add(parent) {\n"
        "    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);\n"
        "    return parent;\n"
        "  }\n"
        "  var UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];\n"
        "  function bytes(b) {\n"
        "    if (b === null || b === undefined) return '-';\n"
        "    if (b < 1024) return b + ' B';\n"
        "    var u = -1;\n"
        "    do { b /= 1024; u++; } while (b >= 1024 && u < UNITS.length - 1);\n"
        "    return b.toFixed(2) + ' ' + UNITS[u];\n"
        "  }\n"
        "  function secs(s) {\n"
        "    return s === null || s === undefined ? '-' : s.toFixed(3) + 's';\n"
        "  }\n"
        "  /* The wall-clock time (UTC, ISO 8601) of s seconds into the run;\n"
        "     '' when the trace carries no wall clock. */\n"
        "  function utc(s) {\n"
        "    if (s === null || s === undefined || data.start_utc_ms === null) return '';\n"
        "    return new Date(data.start_utc_ms + s * 1000).toISOString();\n"
        "  }\n"
        "  function pct(a, b) {\n"
        "    return b ? (100 * a / b).toFixed(1) + '%' : '';\n"
        "  }\n"
        "  /* Axis ticks: about n round steps from 0 to max. */\n"
        "  function ticks(max, n, binary) {\n"
        "    if (!(max > 0)) return [0];\n"
        "    var raw = max / n, base;\n"
        "    if (binary) {\n"
        "      base = Math.pow(1024, Math.floor(Math.log(raw) / Math.log(1024)));\n"
        "      var steps = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];\n"
        "      var step = base * 1024;\n"
        "      for (var i = 0; i < steps.length; i++) {\n"
        "        if (base * steps[i] >= raw) { step = base * steps[i]; break; }\n"
        "      }\n"
        "    } else {\n"
        "      base = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));\n"
        "      var m = raw / base;\n"
        "      var step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * base;\n"
        "    }\n"
        "    var out = [];\n"
        "    for (var v = 0; v <= max * 1.0001; v += step) out.push(v);\n"
        "    return out;\n"
        "  }\n"
        "\n"
        "  var node = document.getElementById('vramtrace-data');\n"
        "  var data = node ? JSON.parse(node.textContent) : null;\n"
        "  if (!data) {\n"
        "    add(document.querySelector('main'), el('p', {'class': 'note'}, 'This report holds no data (the analyzer ran out of memory).'));\n"
        "    body.setAttribute('data-rendered', 'empty');\n"
        "    return;\n"
        "  }\n"
        "  var duration = data.duration_s > 0 ? data.duration_s : 1;\n"
        "  var ooms = data.failures.filter(function (f) { return f.oom; });\n"
        "\n"
        "  /* ---- run summary ---- */\n"
        "  (function () {\n"
        "    var run = document.getElementById('run');\n"
        "    var first = data.processes[0];\n"
        "    if (first) {\n"
        "      add(run, el('div', {'class': 'cmd'}, first.cmdline));\n"
        "      document.title = 'vramtrace: ' + first.cmdline.slice(0, 80);\n"
        "    }\n"
        "    var s = el('div', {'class': 'summary'});\n"
        "    var events = data.processes.reduce(function (a, p) { return a + p.events; }, 0);\n"
        "    add(s, el('span', null, data.processes.length + ' process' + (data.processes.length === 1 ? '' : 'es') + ', ' + events + ' events over ' + secs(data.duration_s)));\n"
        "    if (data.start_utc_ms !== null) add(s, el('span', null, 'started ' + utc(0)));\n"
        "    add(s, el('span', null, data.server_ready ? 'server ready at ' + secs(data.server_ready.t) + ' (pid ' + data.server_ready.pid + ', port ' + data.server_ready.port + ')' : 'server never listened'));\n"
        "    var rq = data.requests;\n"
        "    if (rq.connections || rq.annotated) {\n"
        "      add(s, el('span', null, 'at most ' + rq.max_inflight + ' request' + (rq.max_inflight === 1 ? '' : 's') + ' in flight'));\n"
        "    }\n"
        "    if (rq.single_request_peak_bytes !== null) {\n"
        "      add(s, el('span', null, 'one request alone: ' + bytes(rq.single_request_peak_bytes) + ' grown on device ' + rq.single_request_peak_device));\n"
        "    }\n"
        "    add(s, el('span', null, data.failures.length + ' failed call' + (data.failures.length === 1 ? '' : 's') + ' (' + ooms.length + ' out of memory)'));\n"
        "    add(run, s);\n"
        "  })();\n"
        "\n"
        "  /* ---- diagnosis ---- */\n"
        "  /* d is the report's \"diagnosis\" object (DESIGN.md: verdict, detail,\n"
        "     stage, evidence, actions, costs, verify); null when the analyzer\n"
        "     made none. */\n"
        "  function renderDiagnosis(box, d) {\n"
        "    if (!d) {\n"
        "      var div = el('div', {'class': 'diag' + (ooms.length ? '' : ' none')});\n"
        "      if (ooms.length) {\n"
        "        var o = ooms[0];\n"
        "        add(div, el('p', null, ooms.length + ' allocation' + (ooms.length === 1 ? '' : 's') + ' ran out of memory; the first: ' +\n"
        "          bytes(o.requested_bytes) + ' by ' + o.api + ' on ' + (o.device >= 0 ? 'device ' + o.device : 'the host') +\n"
        "          ' at ' + secs(o.t) + ', ' + o.stage + ' stage, phase ' + o.phase + ', ' + o.inflight + ' in flight' +\n"
        "          (o.free_bytes !== null ? '; the driver reported ' + bytes(o.free_bytes) + ' free of ' + bytes(o.total_bytes) : '') + '.'));\n"
        "      } else {\n"
        "        add(div, el('p', null, 'No allocation ran out of memory.'));\n"
        "      }\n"
        "      add(div, el('p', {'class': 'note'}, 'No verdict in this report: see the failed calls below.'));\n"
        "      add(box, div);\n"
        "      return;\n"
        "    }\n"
        "    var none = d.verdict === 'none';\n"
        "    var div = el('div', {'class': 'diag' + (none ? ' none' : ''), 'data-verdict': d.verdict});\n"
        "    var h = el('p');\n"
        "    add(h, el('span', {'class': 'verdict ' + d.verdict}, d.verdict));\n"
        "    var what = [];\n"
        "    if (d.detail) what.push(d.detail.replace(/_/g, ' '));\n"
        "    if (d.stage) what.push(d.stage + ' stage');\n"
        "    if (d.device !== null && d.device !== undefined) what.push('device ' + d.device);\n"
        "    if (d.engine) what.push('engine ' + d.engine);\n"
        "    add(h, document.createTextNode(what.join(' \\u00b7 ')));\n"
        "    add(div, h);\n"
        "    function list(title, items, cls) {\n"
        "      if (!items || !items.length) return;\n"
        "      add(div, el('h4', null, title));\n"
        "      var ul = el('ul', {'class': cls});\n"
        "      items.forEach(function (it) {\n"
        "        add(ul, el('li', null, typeof it === 'string' ? it : it.text));\n"
        "      });\n"
        "      add(div, ul);\n"
        "    }\n"
        "    list('Evidence', d.evidence, 'evidence');\n"
        "    list('What to change', d.actions, 'actions');\n"
        "    list('What it costs', d.costs, 'costs');\n"
        "    list('How to verify', d.verify, 'verify');\n"
        "    add(box, div);\n"
        "  }\n"
        "  renderDiagnosis(document.querySelector('#diagnosis .body'), data.diagnosis);\n"
        "\n"
        "  /* ---- legend ---- */\n"
        "  var phaseNames = [];\n"
        "  data.devices.forEach(function (d) {\n"
        "    d.phases.forEach(function (p) { if (phaseNames.indexOf(p.name) < 0) phaseNames.push(p.name); });\n"
        "  });\n"
        "  phaseNames.sort(function (a, b) { return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0); });\n"
        "  (function () {\n"
        "    var lg = document.getElementById('legend');\n"
        "    phaseNames.forEach(function (n) {\n"
        "      add(lg, add(el('span', {'class': 'key', 'data-phase': n}), el('span', {'class': 'sw', style: 'background:' + color(n)}), el('span', null, n)));\n"
        "    });\n"
        "    add(lg, add(el('span', {'class': 'key'}), el('span', {'class': 'sw line', style: 'border-color:var(--ready)'}), el('span', null, 'server ready')));\n"
        "    add(lg, add(el('span', {'class': 'key'}), el('span', {'class': 'sw line', style: 'border-color:var(--oom);border-top-style:solid'}), el('span', null, 'out of memory')));\n"
        "    add(lg, add(el('span', {'class': 'key'}), el('span', {'class': 'sw line', style: 'border-color:var(--mark)'}), el('span', null, 'mark')));\n"
        "    add(lg, add(el('span', {'class': 'key'}), el('span', {'class': 'sw line', style: 'border-color:var(--oom)'}), el('span', null, 'capacity')));\n"
        "    if (data.requests.connections || data.requests.annotated) {\n"
        "      add(lg, add(el('span', {'class': 'key'}), el('span', {'class': 'sw', style: 'background:#9467bd;opacity:.5'}), el('span', null, 'requests in flight')));\n"
        "    }\n"
        "  })();\n"
        "\n"
        "  /* ---- timelines ---- */\n"
        "  var tip = document.getElementById('tooltip');\n"
        "  function findIndex(ts, t) {\n"
        "    /* the last point at or before t, -1 before the first */\n"
        "    var lo = 0, hi = ts.length - 1, ans = -1;\n"
        "    while (lo <= hi) {\n"
        "      var mid = (lo + hi) >> 1;\n"
        "      if (ts[mid] <= t) { ans = mid; lo = mid + 1; } else hi = mid - 1;\n"
        "    }\n"
        "    return ans;\n"
        "  }\n"
        "  var inflightT = data.requests.series.map(function (p) { return p[0]; });\n"
        "  function inflightAt(t) {\n"
        "    var i = findIndex(inflightT, t);\n"
        "    return i < 0 ? 0 : data.requests.series[i][1];\n"
        "  }\n"
        "  var hasRequests = data.requests.connections > 0 || data.requests.annotated > 0;\n"
        "  /* Memory other processes held on a device: the first free-memory probe,\n"
        "     or the diagnosis (which also reads NVML), whichever is larger. */\n"
        "  function otherBytes(d) {\n"
        "    var b = d.baseline_used_bytes || 0;\n"
        "    ((data.diagnosis && data.diagnosis.devices) || []).forEach(function (x) {\n"
        "      if (x.id === d.id && x.other_processes_bytes > b) b = x.other_processes_bytes;\n"
        "    });\n"
        "    return b;\n"
        "  }\n"
        "\n"
        "  function drawTimeline(box, d, width) {\n"
        "    var phases = d.phases.map(function (p, i) { return {name: p.name, values: d.series.by_phase[i]}; });\n"
        "    phases.sort(function (a, b) { return rank(a.name) - rank(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0); });\n"
        "    var ts = d.series.t, n = ts.length;\n"
        "    var totals = new Array(n);\n"
        "    for (var i = 0; i < n; i++) {\n"
        "      var s = 0;\n"
        "      for (var k = 0; k < phases.length; k++) s += phases[k].values[i];\n"
        "      totals[i] = s;\n"
        "    }\n"
        "    var peak = d.peak_bytes || 0;\n"
        "    var cap = d.total_bytes;\n"
        "    var ymax = peak > 0 ? peak * 1.12 : 1024 * 1024 * 1024;\n"
        "    /* Show the capacity line when the peak reaches a third of the card. */\n"
        "    var showCap = cap && peak >= cap / 3;\n"
        "    if (showCap) ymax = Math.max(ymax, cap * 1.04);\n"
        "    var M = {l: 78, r: 16, t: 22, b: 26};\n"
        "    var ph = 220, rh = hasRequests ? 56 : 0;\n"
        "    var H = M.t + ph + (rh ? rh + 14 : 0) + M.b;\n"
        "    var W = width;\n"
        "    var pw = W - M.l - M.r;\n"
        "    var svg = sv('svg', {'class': 'timeline', 'data-device': d.id, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img'});\n"
        "    add(svg, sv('title', null, 'device ' + d.id + ': live bytes by phase over time'));\n"
        "    function X(t) { return M.l + pw * Math.max(0, Math.min(1, t / duration)); }\n"
        "    function Y(b) { return M.t + ph - ph * Math.min(1, b / ymax); }\n"
        "    /* grid and axes */\n"
        "    var grid = sv('g', {'class': 'grid'}), axis = sv('g', {'class': 'axis'});\n"
        "    ticks(ymax, 4, true).forEach(function (v) {\n"
        "      add(grid, sv('line', {x1: M.l, x2: M.l + pw, y1: Y(v), y2: Y(v)}));\n"
        "      add(axis, sv('text', {x: M.l - 6, y: Y(v) + 4, 'text-anchor': 'end'}, bytes(v)));\n"
        "    });\n"
        "    var xt = ticks(duration, Math.max(2, Math.floor(pw / 110)), false);\n"
        "    var bottom = M.t + ph + (rh ? rh + 14 : 0);\n"
        "    xt.forEach(function (v) {\n"
        "      add(grid, sv('line', {x1: X(v), x2: X(v), y1: M.t, y2: bottom}));\n"
        "      add(axis, sv('text', {x: X(v), y: bottom + 16, 'text-anchor': 'middle'}, secs(v).replace(/\\.?0+s$/, 's')));\n"
        "    });\n"
        "    add(axis, sv('path', {d: 'M' + M.l + ',' + M.t + 'V' + (M.t + ph) + 'H' + (M.l + pw), fill: 'none'}));\n"
        "    add(svg, grid, axis);\n"
        "    /* stacked step areas, bottom to top */\n"
        "    var lower = new Array(n).fill(0);\n"
        "    var layer = sv('g', {'class': 'series'});\n"
        "    function stepPath(vals) {\n"
        "      /* from 0 at t=0, each point held until the next, the last to the end */\n"
        "      var p = ['M', X(0), Y(0)];\n"
        "      var prev = 0;\n"
        "      for (var i = 0; i < n; i++) {\n"
        "        var x = X(ts[i]);\n"
        "        p.push('L', x, Y(prev), 'L', x, Y(vals[i]));\n"
        "        prev = vals[i];\n"
        "      }\n"
        "      p.push('L', X(duration), Y(prev));\n"
        "      return p;\n"
        "    }\n"
        "    phases.forEach(function (p) {\n"
        "      var upper = new Array(n);\n"
        "      for (var i = 0; i < n; i++) upper[i] = lower[i] + p.values[i];\n"
        "      var top = stepPath(upper);\n"
        "      var bot = stepPath(lower);\n"
        "      /* walk the lower edge backwards */\n"
        "      var back = [];\n"
        "      for (var j = bot.length - 3; j >= 0; j -= 3) back.push('L', bot[j + 1], bot[j + 2]);\n"
        "      add(layer, sv('path', {'class': 'series', 'data-phase': p.name, 'data-device': d.id, fill: color(p.name), d: top.concat(back, ['Z']).join(' ')}));\n"
        "      lower = upper;\n"
        "    });\n"
        "    add(svg, layer);\n"
        "    add(svg, sv('path', {'class': 'total', d: stepPath(totals).join(' ')}));\n"
        "    /* capacity, and what was left for this run after other processes */\n"
        "    if (showCap) {\n"
        "      add(svg, sv('line', {'class': 'capacity', x1: M.l, x2: M.l + pw, y1: Y(cap), y2: Y(cap)}));\n"
        "      add(svg, sv('text', {'class': 'capacity', x: M.l + pw - 4, y: Y(cap) - 4, 'text-anchor': 'end'}, 'capacity ' + bytes(cap)));\n"
        "      var other = otherBytes(d);\n"
        "      if (other && other < cap) {\n"
        "        var av = cap - other;\n"
        "        add(svg, sv('line', {'class': 'available', x1: M.l, x2: M.l + pw, y1: Y(av), y2: Y(av)}));\n"
        "        add(svg, sv('text', {'class': 'capacity', x: M.l + pw - 4, y: Y(av) + 12, 'text-anchor': 'end'}, bytes(other) + ' held by other processes: ' + bytes(av) + ' left for this run'));\n"
        "      }\n"
        "    }\n"
        "    /* peak */\n"
        "    if (peak > 0 && d.peak_s !== null) {\n"
        "      add(svg, sv('circle', {'class': 'peak', cx: X(d.peak_s), cy: Y(peak), r: 3.5}));\n"
        "      var right = X(d.peak_s) > M.l + pw * 0.75;\n"
        "      add(svg, sv('text', {x: X(d.peak_s) + (right ? -7 : 7), y: Y(peak) - 6, 'text-anchor': right ? 'end' : 'start'}, 'peak ' + bytes(peak)));\n"
        "    }\n"
        "    /* requests in flight: a strip under the chart */\n"
        "    if (rh) {\n"
        "      var top0 = M.t + ph + 14, maxr = Math.max(1, data.requests.max_inflight);\n"
        "      function RY(v) { return top0 + rh - rh * v / maxr; }\n"
        "      var pts = data.requests.series, rp = ['M', X(0), RY(0)], prev = 0;\n"
        "      pts.forEach(function (q) { rp.push('L', X(q[0]), RY(prev), 'L', X(q[0]), RY(q[1])); prev = q[1]; });\n"
        "      rp.push('L', X(duration), RY(prev), 'L', X(duration), RY(0), 'Z');\n"
        "      add(svg, sv('line', {x1: M.l, x2: M.l + pw, y1: top0 + rh, y2: top0 + rh, stroke: '#9aa5b1'}));\n"
        "      add(svg, sv('path', {'class': 'inflight', 'data-device': d.id, d: rp.join(' ')}));\n"
        "      add(svg, sv('text', {x: M.l - 6, y: top0 + 10, 'text-anchor': 'end'}, maxr + ' req'));\n"
        "      add(svg, sv('text', {x: M.l - 6, y: top0 + rh, 'text-anchor': 'end'}, 'in flight'));\n"
        "    }\n"
        "    /* markers: server ready, marks, out-of-memory failures */\n"
        "    var marks = sv('g', {'class': 'markers'});\n"
        "    var labelY = M.t - 8;\n"
        "    if (data.server_ready) {\n"
        "      var x = X(data.server_ready.t);\n"
        "      add(marks, sv('line', {'class': 'marker ready', x1: x, x2: x, y1: M.t, y2: bottom}));\n"
        "      add(marks, sv('text', {'class': 'ready', x: x + 3, y: labelY}, 'ready'));\n"
        "    }\n"
        "    data.marks.forEach(function (m, i) {\n"
        "      var x = X(m.t);\n"
        "      add(marks, add(sv('line', {'class': 'marker mark', x1: x, x2: x, y1: M.t, y2: bottom}), sv('title', null, 'mark ' + m.label + ' at ' + secs(m.t))));\n"
        "      /* Labels while they can stay apart; the line's tooltip has it always. */\n"
        "      if (data.marks.length <= 12) {\n"
        "        var lab = m.label.length > 28 ? m.label.slice(0, 27) + '\\u2026' : m.label;\n"
        "        add(marks, sv('text', {'class': 'mark', x: x + 3, y: M.t + 12 + 12 * (i % 3)}, lab));\n"
        "      }\n"
        "    });\n"
        "    ooms.forEach(function (o) {\n"
        "      if (o.device !== d.id && o.device >= 0) return;\n"
        "      var x = X(o.t);\n"
        "      add(marks, add(sv('line', {'class': 'marker oom', x1: x, x2: x, y1: M.t, y2: bottom}), sv('title', null, 'out of memory: ' + bytes(o.requested_bytes) + ' at ' + secs(o.t))));\n"
        "      add(marks, sv('path', {'class': 'oom', d: 'M' + (x - 5) + ',' + (M.t - 1) + 'L' + (x + 5) + ',' + (M.t - 1) + 'L' + x + ',' + (M.t + 7) + 'Z', fill: 'var(--oom)'}));\n"
        "      add(marks, sv('text', {'class': 'oom', x: x + 7, y: labelY, 'text-anchor': 'start'}, 'OOM ' + bytes(o.requested_bytes)));\n"
        "    });\n"
        "    add(svg, marks);\n"
        "    /* hover: the state at the time under the pointer */\n"
        "    var cursor = sv('line', {'class': 'cursor', x1: 0, x2: 0, y1: M.t, y2: bottom, visibility: 'hidden'});\n"
        "    var hover = sv('rect', {'class': 'hover', x: M.l, y: M.t, width: pw, height: bottom - M.t});\n"
        "    add(svg, cursor, hover);\n"
        "    hover.addEventListener('mousemove', function (ev) {\n"
        "      var r = svg.getBoundingClientRect();\n"
        "      var px = (ev.clientX - r.left) * W / r.width;\n"
        "      var t = Math.max(0, Math.min(duration, (px - M.l) / pw * duration));\n"
        "      var i = findIndex(ts, t);\n"
        "      cursor.setAttribute('x1', X(t));\n"
        "      cursor.setAttribute('x2', X(t));\n"
        "      cursor.setAttribute('visibility', 'visible');\n"
        "      while (tip.firstChild) tip.removeChild(tip.firstChild);\n"
        "      add(tip, el('div', null, 'device ' + d.id + ' at ' + secs(t) + (utc(t) ? ' (' + utc(t) + ')' : '')));\n"
        "      var tb = el('table');\n"
        "      add(tb, add(el('tr'), el('td', null, 'total'), el('td', {'class': 'num'}, bytes(i < 0 ? 0 : totals[i]))));\n"
        "      phases.slice().reverse().forEach(function (p) {\n"
        "        var v = i < 0 ? 0 : p.values[i];\n"
        "        if (!v) return;\n"
        "        add(tb, add(el('tr'), add(el('td'), el('span', {'class': 'sw', style: 'background:' + color(p.name) + ';margin-right:4px'}), document.createTextNode(p.name)), el('td', {'class': 'num'}, bytes(v))));\n"
        "      });\n"
        "      if (hasRequests) add(tb, add(el('tr'), el('td', null, 'in flight'), el('td', {'class': 'num'}, inflightAt(t))));\n"
        "      add(tip, tb);\n"
        "      tip.hidden = false;\n"
        "      var tx = ev.clientX + 14, ty = ev.clientY + 12;\n"
        "      if (tx + tip.offsetWidth > window.innerWidth - 8) tx = ev.clientX - tip.offsetWidth - 14;\n"
        "      if (ty + tip.offsetHeight > window.innerHeight - 8) ty = ev.clientY - tip.offsetHeight - 12;\n"
        "      tip.style.left = tx + 'px';\n"
        "      tip.style.top = ty + 'px';\n"
        "    });\n"
        "    hover.addEventListener('mouseleave', function () {\n"
        "      tip.hidden = true;\n"
        "      cursor.setAttribute('visibility', 'hidden');\n"
        "    });\n"
        "    add(box, svg);\n"
        "    return phases.length;\n"
        "  }\n"
        "\n"
        "  function deviceTitle(d) {\n"
        "    var s = 'device ' + d.id + ': ' + (d.name || '(unnamed)');\n"
        "    if (d.host && data.processes.some(function (p) { return p.host !== d.host; })) s += ' on ' + d.host;\n"
        "    if (d.total_bytes) s += ' (' + bytes(d.total_bytes) + ')';\n"
        "    return s;\n"
        "  }\n"
        "  var shown = data.devices.filter(function (d) { return d.phases.length > 0; });\n"
        "  var drawn = 0;\n"
        "  function drawTimelines() {\n"
        "    var box = document.querySelector('#timelines .body');\n"
        "    while (box.firstChild) box.removeChild(box.firstChild);\n"
        "    var width = Math.max(640, Math.floor(box.clientWidth || 1000));\n"
        "    drawn = 0;\n"
        "    if (!shown.length) add(box, el('p', {'class': 'note'}, 'No device memory was allocated.'));\n"
        "    shown.forEach(function (d) {\n"
        "      var div = el('div', {'class': 'device', 'data-device': d.id});\n"
        "      add(div, el('h3', null, deviceTitle(d) + ' \\u2014 peak ' + bytes(d.peak_bytes) + ' at ' + secs(d.peak_s) + ', ' + bytes(d.live_end_bytes) + ' live at the end'));\n"
        "      add(box, div);\n"
        "      drawn += drawTimeline(div, d, width);\n"
        "    });\n"
        "  }\n"
        "  drawTimelines();\n"
        "  var resizeTimer = null;\n"
        "  window.addEventListener('resize', function () {\n"
        "    clearTimeout(resizeTimer);\n"
        "    resizeTimer = setTimeout(drawTimelines, 150);\n"
        "  });\n"
        "\n"
        "  /* ---- budget bars ---- */\n"
        "  (function () {\n"
        "    var box = document.querySelector('#budgets .body');\n"
        "    if (!shown.length) add(box, el('p', {'class': 'note'}, 'No device memory was allocated.'));\n"
        "    shown.forEach(function (d) {\n"
        "      var base = otherBytes(d);\n"
        "      var scale = d.total_bytes || (d.peak_bytes + base) || 1;\n"
        "      var div = el('div', {'class': 'budget', 'data-device': d.id});\n"
        "      var lab = el('div', {'class': 'label'});\n"
        "      add(lab, el('strong', null, deviceTitle(d)));\n"
        "      add(lab, el('span', {'class': 'muted'}, d.total_bytes\n"
        "        ? 'peak ' + bytes(d.peak_bytes) + ' of ' + bytes(d.total_bytes) + ' (' + pct(d.peak_bytes, d.total_bytes) + ')' + (base ? ' + ' + bytes(base) + ' held by other processes' : '') + '; ' + bytes(Math.max(0, d.total_bytes - base - d.peak_bytes)) + ' free'\n"
        "        : 'peak ' + bytes(d.peak_bytes) + ' (capacity unknown)'));\n"
        "      add(div, lab);\n"
        "      var bar = el('div', {'class': 'bar'});\n"
        "      if (base) add(bar, el('div', {'class': 'seg baseline', 'data-phase': '(other processes)', style: 'width:' + (100 * base / scale) + '%', title: 'held by other processes: ' + bytes(base)}));\n"
        "      var ps = d.phases.slice().sort(function (a, b) { return rank(a.name) - rank(b.name); });\n"
        "      ps.forEach(function (p) {\n"
        "        if (!p.at_peak_bytes) return;\n"
        "        add(bar, el('div', {'class': 'seg', 'data-phase': p.name, style: 'width:' + (100 * p.at_peak_bytes / scale) + '%;background:' + color(p.name), title: p.name + ': ' + bytes(p.at_peak_bytes) + ' at the peak'}));\n"
        "      });\n"
        "      add(div, bar);\n"
        "      var tb = el('table', {'class': 'data phases'});\n"
        "      add(tb, add(el('tr'), el('th', null, 'phase'), el('th', {'class': 'num'}, 'at device peak'), el('th', {'class': 'num'}, 'own peak'), el('th', {'class': 'num'}, 'at'), el('th', {'class': 'num'}, 'live at end'), el('th', {'class': 'num'}, 'allocs'), el('th', {'class': 'num'}, 'frees'), el('th', {'class': 'num'}, 'failed')));\n"
        "      ps.forEach(function (p) {\n"
        "        add(tb, add(el('tr', {'data-phase': p.name}),\n"
        "          add(el('td'), el('span', {'class': 'sw', style: 'background:' + color(p.name) + ';margin-right:6px;vertical-align:-1px'}), document.createTextNode(p.name)),\n"
        "          el('td', {'class': 'num'}, bytes(p.at_peak_bytes)), el('td', {'class': 'num'}, bytes(p.peak_bytes)),\n"
        "          el('td', {'class': 'num'}, secs(p.peak_s)), el('td', {'class': 'num'}, bytes(p.live_end_bytes)),\n"
        "          el('td', {'class': 'num'}, p.allocs), el('td', {'class': 'num'}, p.frees), el('td', {'class': 'num'}, p.failed)));\n"
        "      });\n"
        "      add(div, tb);\n"
        "      add(box, div);\n"
        "    });\n"
        "  })();\n"
        "\n"
        "  /* ---- the engine's log held against the trace ---- */\n"
        "  (function () {\n"
        "    var box = document.querySelector('#enginelog .body');\n"
        "    var g = data.engine_log;\n"
        "    if (!g) {\n"
        "      add(box, el('p', {'class': 'note'}, 'No engine log: record keeps the server output in output.log; analyze --log FILE reads one.'));\n"
        "      return;\n"
        "    }\n"
        "    add(box, el('p', {'class': 'muted'}, g.path + ' (' + (g.engine || 'engine not recognised') + ', ' + g.lines + ' lines)'));\n"
        "    if (g.comparison.length) {\n"
        "      var tb = el('table', {'class': 'data'});\n"
        "      add(tb, add(el('tr'), el('th', null, 'quantity'), el('th', null, 'device'), el('th', {'class': 'num'}, 'the engine printed'), el('th', {'class': 'num'}, 'traced'), el('th', {'class': 'num'}, 'difference')));\n"
        "      g.comparison.forEach(function (c) {\n"
        "        add(tb, add(el('tr', {'class': c.flagged ? 'oom' : ''}), el('td', null, c.quantity), el('td', null, c.device),\n"
        "          el('td', {'class': 'num'}, bytes(c.engine_bytes)), el('td', {'class': 'num'}, bytes(c.traced_bytes)),\n"
        "          el('td', {'class': 'num'}, c.difference_percent.toFixed(1) + '%')));\n"
        "      });\n"
        "      add(box, tb);\n"
        "    }\n"
        "    if (g.fatal_error !== null) {\n"
        "      var e = g.errors[g.fatal_error];\n"
        "      add(box, el('p', null, 'Fatal error, log line ' + e.line + (e.time_utc ? ' (' + e.time_utc + ')' : '') + ': ' + e.text));\n"
        "      if (g.fatal_failure_match) add(box, el('p', {'class': 'muted'}, g.fatal_failure_match));\n"
        "    }\n"
        "    data.findings.forEach(function (f) { add(box, el('p', {'class': 'finding'}, 'Finding: ' + f.text)); });\n"
        "  })();\n"
        "\n"
        "  /* ---- failures ---- */\n"
        "  (function () {\n"
        "    var box = document.querySelector('#failures .body');\n"
        "    if (!data.failures.length) {\n"
        "      add(box, el('p', {'class': 'note'}, 'No call failed.'));\n"
        "      return;\n"
        "    }\n"
        "    var tb = el('table', {'class': 'data'});\n"
        "    add(tb, add(el('tr'), el('th', null, 'time'), el('th', null, 'UTC'), el('th', null, 'pid'), el('th', null, 'device'), el('th', null, 'call'), el('th', {'class': 'num'}, 'size'), el('th', null, 'error'), el('th', null, 'driver free / total'), el('th', null, 'stage'), el('th', null, 'phase'), el('th', {'class': 'num'}, 'in flight')));\n"
        "    data.failures.forEach(function (f) {\n"
        "      add(tb, add(el('tr', {'class': f.oom ? 'oom' : ''}),\n"
        "        el('td', null, secs(f.t)), el('td', null, utc(f.t)), el('td', null, f.pid), el('td', null, f.device >= 0 ? f.device : (f.family === 'pinned' || f.family === 'registered' ? 'host' : '?')),\n"
        "        el('td', null, f.api), el('td', {'class': 'num'}, f.requested_bytes ? bytes(f.requested_bytes) : '-'), el('td', null, f.error),\n"
        "        el('td', null, f.free_bytes !== null ? bytes(f.free_bytes) + ' / ' + bytes(f.total_bytes) : '-'),\n"
        "        el('td', null, f.oom ? f.stage : ''), el('td', null, f.oom ? f.phase : ''), el('td', {'class': 'num'}, f.oom ? f.inflight : '')));\n"
        "    });\n"
        "    add(box, tb);\n"
        "  })();\n"
        "\n"
        "  /* ---- top sites ---- */\n"
        "  (function () {\n"
        "    var box = document.querySelector('#sites .body');\n"
        "    if (!data.sites.length) {\n"
        "      add(box, el('p', {'class': 'note'}, 'Nothing was live at a peak.'));\n"
        "      return;\n"
        "    }\n"
        "    add(box, el('p', {'class': 'muted'}, 'The call paths that held the most of each phase at the device\\'s peak (at most ' + data.top_sites_per_phase + ' per phase), innermost frame first.'));\n"
        "    var byDev = {};\n"
        "    data.sites.forEach(function (s) { (byDev[s.device] = byDev[s.device] || []).push(s); });\n"
        "    data.devices.forEach(function (d) {\n"
        "      var list = byDev[d.id];\n"
        "      if (!list) return;\n"
        "      add(box, el('h3', null, deviceTitle(d) + ' \\u2014 peak ' + bytes(d.peak_bytes) + ' at ' + secs(d.peak_s)));\n"
        "      var tb = el('table', {'class': 'data sites', 'data-device': d.id});\n"
        "      add(tb, add(el('tr'), el('th', null, 'phase'), el('th', {'class': 'num'}, 'bytes'), el('th', {'class': 'num'}, 'allocations'), el('th', null, 'call path')));\n"
        "      list.forEach(function (s) {\n"
        "        var cell = el('td');\n"
        "        if (!s.frames.length) {\n"
        "          add(cell, el('span', {'class': 'note'}, 'no stack recorded'));\n"
        "        } else {\n"
        "          var det = el('details');\n"
        "          var shownFrames = Math.min(3, s.frames.length);\n"
        "          add(det, el('summary', {'class': 'cmd'}, s.frames.slice(0, shownFrames).map(function (f) { return f.split('  ')[0]; }).join(' \\u2190 ') + (s.depth > shownFrames ? '  (+' + (s.depth - shownFrames) + ' more)' : '')));\n"
        "          add(det, el('pre', {'class': 'stack'}, s.frames.join('\\n') + (s.depth > s.frames.length ? '\\n... ' + (s.depth - s.frames.length) + ' more' : '')));\n"
        "          add(cell, det);\n"
        "        }\n"
        "        add(tb, add(el('tr', {'class': 'site', 'data-phase': s.phase}),\n"
        "          add(el('td'), el('span', {'class': 'sw', style: 'background:' + color(s.phase) + ';margin-right:6px;vertical-align:-1px'}), document.createTextNode(s.phase)),\n"
        "          el('td', {'class': 'num'}, bytes(s.bytes)), el('td', {'class': 'num'}, s.allocs), cell));\n"
        "      });\n"
        "      add(box, tb);\n"
        "    });\n"
        "  })();\n"
        "\n"
        "  /* ---- processes ---- */\n"
        "  (function () {\n"
        "    var box = document.querySelector('#processes .body');\n"
        "    var tb = el('table', {'class': 'data'});\n"
        "    add(tb, add(el('tr'), el('th', null, 'pid'), el('th', null, 'parent'), el('th', null, 'host'), el('th', null, 'exit'), el('th', {'class': 'num'}, 'events'), el('th', null, 'command line')));\n"
        "    data.processes.forEach(function (p) {\n"
        "      add(tb, add(el('tr'), el('td', null, p.pid), el('td', null, p.ppid), el('td', null, p.host),\n"
        "        el('td', null, p.exit + (p.truncated ? ' (truncated)' : '')), el('td', {'class': 'num'}, p.events + (p.events_dropped ? ' (' + p.events_dropped + ' dropped)' : '')),\n"
        "        el('td', {'class': 'cmd'}, p.cmdline)));\n"
        "    });\n"
        "    add(box, tb);\n"
        "  })();\n"
        "\n"
        "  body.setAttribute('data-rendered', 'ok');\n"
        "  console.log('vramtrace report: ' + shown.length + ' timeline(s), ' + drawn + ' series');\n"
        "})();\n"
        "</script>\n"
        "</body>\n"
        "</html>\n";


/* ---- the embedded data --------------------------------------------------- */

/* The JSON writer's string escaping, used at top level (no separators). */
static void str(FILE *m, const char *s)
{
	struct vrt_json w;

	vrt_json_init(&w, m);
	vrt_json_string(&w, s);
}

static void secs(FILE *m, const struct vrt_trace *t, int64_t ts)
{
	struct vrt_json w;

	vrt_json_init(&w, m);
	vrt_json_seconds(&w, ts - t->start_ns);
}

static void key(FILE *m, int *first, const char *k)
{
	if (!*first)
		fputc(',', m);
	*first = 0;
	fprintf(m, "\"%s\":", k);
}

static void key_uint(FILE *m, int *first, const char *k, uint64_t v)
{
	key(m, first, k);
	fprintf(m, "%" PRIu64, v);
}

static void key_str(FILE *m, int *first, const char *k, const char *s)
{
	key(m, first, k);
	str(m, s);
}

static void key_secs(FILE *m, int *first, const char *k,
                     const struct vrt_trace *t, int64_t ts)
{
	key(m, first, k);
	secs(m, t, ts);
}

static void cmdline(FILE *m, const struct vrt_process *p)
{
	char *text = NULL;
	size_t len = 0, j;
	FILE *c = open_memstream(&text, &len);

	if (!c) {
		str(m, p->exe);
		return;
	}
	for (j = 0; j < p->argc; j++)
		fprintf(c, "%s%s", j ? " " : "", p->argv[j]);
	if (!p->argc && p->exe)
		fputs(p->exe, c);
	if (fclose(c)) {
		str(m, p->exe);
	} else {
		str(m, text);
	}
	free(text);
}

static void processes(FILE *m, const struct vrt_trace *t)
{
	size_t i;

	fputs("\"processes\":[", m);
	for (i = 0; i < t->nprocs; i++) {
		const struct vrt_process *p = &t->procs[i];
		char ex[32];
		int first = 1;
		if (p->exit_kind == VRT_EXIT_CODE)
			snprintf(ex, sizeof(ex), "exit %d", p->exit_code);
		else if (p->exit_kind == VRT_EXIT_SIGNAL)
			snprintf(ex, sizeof(ex), "signal %d", p->exit_code);
		else
			snprintf(ex, sizeof(ex), "unknown");
		fputs(i ? ",{" : "{", m);
		key_uint(m, &first, "pid", p->pid);
		key_uint(m, &first, "ppid", p->ppid);
		key_str(m, &first, "host", p->host);
		key(m, &first, "cmdline");
		cmdline(m, p);
		key_str(m, &first, "exit", ex);
		key_uint(m, &first, "events", p->events);
		key_uint(m, &first, "events_dropped", p->events_dropped);
		key(m, &first, "truncated");
		fputs(p->truncated ? "true" : "false", m);
		key_secs(m, &first, "start_s", t, p->start_mono_ns);
		fputc('}', m);
	}
	fputs("],", m);
}

static int phase_used(const struct vrt_counters *c)
{
	return c->allocs || c->frees || c->failed || c->peak_bytes;
}

static void device(FILE *m, const struct vrt_trace *t,
                   const struct vrt_replay *r, size_t i)
{
	const struct vrt_device *dv = &t->devices[i];
	const struct vrt_replay_device *d = &r->dev[i];
	unsigned slots[VRT_REPLAY_MAX_PHASES], n = 0, k;
	char pb[32];
	size_t j;
	int first = 1;

	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (phase_used(&d->phase[k]))
			slots[n++] = k;
	fputc('{', m);
	key_uint(m, &first, "id", i);
	key_str(m, &first, "name", dv->name);
	key_str(m, &first, "host", dv->host);
	key(m, &first, "ordinal");
	fprintf(m, "%" PRId64, dv->ordinal);
	key_str(m, &first, "uuid", dv->uuid[0] ? dv->uuid : NULL);
	key(m, &first, "total_bytes");
	if (dv->have_total)
		fprintf(m, "%" PRIu64, dv->total_bytes);
	else if (d->have_baseline)
		fprintf(m, "%" PRIu64, d->probe_total_bytes);
	else
		fputs("null", m);
	key(m, &first, "baseline_used_bytes");
	if (d->have_baseline)
		fprintf(m, "%" PRIu64, d->baseline_used_bytes);
	else
		fputs("null", m);
	key_uint(m, &first, "peak_bytes", d->peak_bytes);
	key(m, &first, "peak_s");
	if (d->peak_bytes)
		secs(m, t, d->peak_ts);
	else
		fputs("null", m);
	key_uint(m, &first, "live_end_bytes", d->tracked_bytes);
	key(m, &first, "phases");
	fputc('[', m);
	for (j = 0; j < n; j++) {
		const struct vrt_counters *c = &d->phase[slots[j]];
		int f2 = 1;
		fputs(j ? ",{" : "{", m);
		key_str(m, &f2, "name",
		        vrt_load_phase_name(t, slots[j], pb, sizeof(pb)));
		key_uint(m, &f2, "allocs", c->allocs);
		key_uint(m, &f2, "frees", c->frees);
		key_uint(m, &f2, "failed", c->failed);
		key_uint(m, &f2, "peak_bytes", c->peak_bytes);
		key(m, &f2, "peak_s");
		if (c->peak_bytes)
			secs(m, t, c->peak_ts);
		else
			fputs("null", m);
		key_uint(m, &f2, "live_end_bytes", c->live_bytes);
		key_uint(m, &f2, "at_peak_bytes", d->peak_by_phase[slots[j]]);
		fputc('}', m);
	}
	/* The timeline as parallel arrays: t, then one array per phase in
	 * the order of "phases". */
	fputs("],\"series\":{\"t\":[", m);
	for (j = 0; j < d->nseries; j++) {
		if (j)
			fputc(',', m);
		secs(m, t, d->series[j].ts);
	}
	fputs("],\"by_phase\":[", m);
	for (k = 0; k < n; k++) {
		fputs(k ? ",[" : "[", m);
		for (j = 0; j < d->nseries; j++)
			fprintf(m, "%s%" PRIu64, j ? "," : "",
			        d->series[j].by_phase[slots[k]]);
		fputc(']', m);
	}
	fputs("]}}", m);
}

static void requests(FILE *m, const struct vrt_trace *t,
                     const struct vrt_replay *r)
{
	size_t i;
	int first = 1;

	fputs("\"requests\":{", m);
	key_uint(m, &first, "max_inflight", r->max_inflight);
	key(m, &first, "max_inflight_s");
	if (r->max_inflight)
		secs(m, t, r->max_inflight_ts);
	else
		fputs("null", m);
	key_uint(m, &first, "connections", r->connections);
	key_uint(m, &first, "annotated", r->requests);
	key(m, &first, "single_request_peak_bytes");
	if (r->have_single_request)
		fprintf(m, "%" PRIu64, r->single_request_peak_bytes);
	else
		fputs("null", m);
	key(m, &first, "single_request_peak_device");
	if (r->have_single_request)
		fprintf(m, "%" PRId32, r->single_request_peak_device);
	else
		fputs("null", m);
	/* [[t, in flight], ...] */
	key(m, &first, "series");
	fputc('[', m);
	for (i = 0; i < r->ninflight_series; i++) {
		fputs(i ? ",[" : "[", m);
		secs(m, t, r->inflight_series[i].ts);
		fprintf(m, ",%" PRIu32 "]", r->inflight_series[i].inflight);
	}
	fputs("]},", m);
}

static void marks(FILE *m, const struct vrt_trace *t,
                  const struct vrt_replay *r)
{
	size_t i;

	fputs("\"marks\":[", m);
	for (i = 0; i < r->nmarks; i++) {
		const struct vrt_replay_mark *e = &r->marks[i];
		const char *label = vrt_load_str(t, e->label);
		int first = 1;
		fputs(i ? ",{" : "{", m);
		key_secs(m, &first, "t", t, e->ts);
		key_uint(m, &first, "pid", t->procs[e->proc].pid);
		key_str(m, &first, "label", label ? label : "");
		fputc('}', m);
	}
	fputs("],", m);
}

static void failures(FILE *m, const struct vrt_trace *t,
                     const struct vrt_replay *r)
{
	size_t i;

	fputs("\"failures\":[", m);
	for (i = 0; i < r->nfails; i++) {
		const struct vrt_replay_failure *x = &r->fails[i];
		const char *api = vrt_api_name(x->api);
		char eb[32], pb[32];
		int first = 1;
		fputs(i ? ",{" : "{", m);
		key_secs(m, &first, "t", t, x->ts);
		key_uint(m, &first, "pid", t->procs[x->proc].pid);
		key(m, &first, "device");
		fprintf(m, "%" PRId32, x->device >= 0 ? x->device : -1);
		key_str(m, &first, "family",
		        vrt_replay_family_name(x->family));
		key_str(m, &first, "api", api ? api : "(unknown api)");
		key_uint(m, &first, "requested_bytes", x->requested_bytes);
		key_str(m, &first, "error",
		        vrt_replay_error_name(x->api, x->error, eb,
		                              sizeof(eb)));
		key(m, &first, "oom");
		fputs(x->oom ? "true" : "false", m);
		key(m, &first, "free_bytes");
		if (x->have_info)
			fprintf(m, "%" PRIu64, x->free_bytes);
		else
			fputs("null", m);
		key(m, &first, "total_bytes");
		if (x->have_info)
			fprintf(m, "%" PRIu64, x->total_bytes);
		else
			fputs("null", m);
		key_str(m, &first, "stage", x->after_ready ? "request" : "load");
		key_str(m, &first, "phase",
		        vrt_load_phase_name(t, x->phase, pb, sizeof(pb)));
		key_uint(m, &first, "inflight", x->inflight);
		fputc('}', m);
	}
	fputs("],", m);
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s && s[1] ? s + 1 : p;
}

/* A frame as report_text prints it: "fn+0x10  module", "fn  file:line". */
static void frame_str(FILE *m, const struct vrt_trace *t,
                      const struct vrt_frame *fr)
{
	const char *fn = vrt_load_str(t, fr->function);
	const char *file = base_name(vrt_load_str(t, fr->file));
	char buf[600];
	size_t n = 0;

	buf[0] = '\0';
	if (fn)
		n = (size_t)snprintf(buf, sizeof(buf), "%s", fn);
	else if (fr->kind == VRT_FRAME_NATIVE && fr->ip)
		n = (size_t)snprintf(buf, sizeof(buf), "0x%" PRIx64, fr->ip);
	else
		n = (size_t)snprintf(buf, sizeof(buf), "??");
	if (n < sizeof(buf) && fn && fr->kind == VRT_FRAME_NATIVE &&
	    fr->offset)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "+0x%" PRIx64,
		                      fr->offset);
	if (n < sizeof(buf) && file)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "  %s", file);
	if (n < sizeof(buf) && file && fr->kind == VRT_FRAME_PYTHON &&
	    fr->line)
		snprintf(buf + n, sizeof(buf) - n, ":%" PRIu64, fr->line);
	str(m, buf);
}

static void sites(FILE *m, const struct vrt_trace *t,
                  const struct vrt_replay *r)
{
	uint32_t fr[HTML_SITE_FRAMES];
	size_t i, j, n;

	fputs("\"sites\":[", m);
	for (i = 0; i < r->nsites; i++) {
		const struct vrt_replay_site *x = &r->sites[i];
		char pb[32];
		int first = 1;
		fputs(i ? ",{" : "{", m);
		key_uint(m, &first, "device", (uint64_t)x->device);
		key_str(m, &first, "phase",
		        vrt_load_phase_name(t, x->phase, pb, sizeof(pb)));
		key_uint(m, &first, "bytes", x->bytes);
		key_uint(m, &first, "allocs", x->allocs);
		key_uint(m, &first, "depth",
		         x->stack < t->nstacks ? t->stacks[x->stack].depth
		                               : 0);
		key(m, &first, "frames");
		fputc('[', m);
		n = vrt_load_stack_frames(t, x->stack, fr, HTML_SITE_FRAMES);
		for (j = 0; j < n; j++) {
			if (j)
				fputc(',', m);
			frame_str(m, t, &t->frames[fr[j]]);
		}
		fputs("]}", m);
	}
	fputs("],", m);
}

static void diagnosis(FILE *m, const struct vrt_trace *t,
                      const struct vrt_diagnosis *d)
{
	struct vrt_json w;

	fputs("\"diagnosis\":", m);
	if (!d) {
		fputs("null", m);
		return;
	}
	/* The same object as the JSON report's "diagnosis" (DESIGN.md). */
	vrt_json_init(&w, m);
	vrt_report_diagnosis_json(&w, t, d);
}

/* The whole data document into m. */
static void data(FILE *m, const struct vrt_trace *t, const struct vrt_replay *r,
                 const struct vrt_diagnosis *d, const struct vrt_logcheck *lc)
{
	size_t i;
	int first = 1;

	fputs("{\"schema\":\"vramtrace-html/1\",", m);
	key(m, &first, "duration_s");
	secs(m, t, t->end_ns);
	/* The run's start as UTC milliseconds since the epoch: the page
	 * turns every time into wall-clock time with it. */
	key(m, &first, "start_utc_ms");
	if (vrt_wallclock_known(t))
		fprintf(m, "%" PRId64,
		        vrt_wallclock_utc(t, t->start_ns) / 1000000);
	else
		fputs("null", m);
	fputc(',', m);
	processes(m, t);
	fputs("\"server_ready\":", m);
	if (r->have_server_ready) {
		first = 1;
		fputc('{', m);
		key_secs(m, &first, "t", t, r->server_ready_ts);
		key_uint(m, &first, "pid",
		         t->procs[r->server_ready_proc].pid);
		key_uint(m, &first, "port", r->server_port);
		fputs("},", m);
	} else {
		fputs("null,", m);
	}
	requests(m, t, r);
	fputs("\"devices\":[", m);
	for (i = 0; i < t->ndevices && i < r->ndevices; i++) {
		if (i)
			fputc(',', m);
		device(m, t, r, i);
	}
	fputs("],", m);
	fprintf(m, "\"host_pinned_peak_bytes\":%" PRIu64 ",",
	        r->host_pinned_peak);
	marks(m, t, r);
	failures(m, t, r);
	sites(m, t, r);
	fprintf(m, "\"top_sites_per_phase\":%d,", VRT_REPLAY_TOP_SITES);
	diagnosis(m, t, d);
	/* "engine_log" and "findings", as in the JSON report */
	{
		struct vrt_json w;
		vrt_json_init(&w, m);
		/* members of the object this function is writing: the writer
		 * puts a comma before each */
		w.depth = 1;
		w.first[1] = 0;
		vrt_report_enginelog_json(&w, t, lc);
	}
	fputc('}', m);
}

void vrt_report_html_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_diagnosis *d,
                           const struct vrt_logcheck *lc)
{
	char *blob = NULL;
	size_t len = 0, i;
	FILE *m = open_memstream(&blob, &len);

	fputs(page_head, f);
	if (m) {
		data(m, t, r, d, lc);
		if (fclose(m)) {
			free(blob);
			blob = NULL;
		}
	}
	if (!blob) {
		/* Out of memory: the page says that its data is missing. */
		fputs("null", f);
	}
	for (i = 0; blob && i < len; i++) {
		if (blob[i] == '<')
			fputs("\\u003c", f);
		else
			fputc(blob[i], f);
	}
	free(blob);
	fputs(page_tail, f);
}
