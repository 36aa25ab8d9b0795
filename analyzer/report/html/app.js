/*
 * The vramtrace HTML report: draws the page from the "vramtrace-report/1"
 * JSON document in #vramtrace-data, the one `analyze --format json` writes
 * (README.md, "Reading the report"). Keys a report lacks (an older or
 * newer vramtrace, a run without a server or without marks) leave their
 * part out; keys it does not know are ignored, except in the engine's log
 * and the findings, which are shown as they come.
 *
 * Trace strings (command lines, labels, symbol names) only ever become text
 * (textContent, SVG text nodes, attribute values): never markup.
 *
 * Timelines: every device's chart shows the same span of the run (the
 * view). By default it is cropped to where memory changes; brushing,
 * Ctrl + wheel, the toolbar, the overview and the keyboard change it. A
 * chart is drawn in columns a few pixels wide: a column shows the state in
 * it with the largest total of the visible phases (so a change that lasted
 * one event still reaches its height), a dotted line the least total in
 * it, and a translucent mark on a phase where that phase held more at some
 * moment of the column than the state drawn (the report's per-bucket
 * ranges: a phase that rose and fell back while another grew).
 *
 * What tests read: body[data-rendered="ok"] once drawn, body[data-error]
 * on a script error; #timelines[data-view-start][data-view-end] (seconds);
 * per device svg.timeline[data-device] with data-plot-left/-top/-width/
 * -height and data-ymax (bytes at the top of the plot), path.series and
 * path.range[data-phase], path.inflight, line.marker.ready/.mark/.oom and
 * text.label; div.budget[data-device] with div.seg[data-phase]; the
 * windows table's tr.window[data-start][data-end].
 */
(function () {
  'use strict';
  var body = document.body;
  window.addEventListener('error', function (ev) {
    body.setAttribute('data-error', String(ev.message || ev));
  });

  /* ---- helpers ---- */
  var SVGNS = 'http://www.w3.org/2000/svg';
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs || {}) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined || c === false) continue;
      parent.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return parent;
  }
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }
  function isObj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
  function num(v) { return typeof v === 'number' && isFinite(v); }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function get(o, k) { return isObj(o) && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined; }
  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }
  function section(id) { return document.querySelector('#' + id + ' .body'); }

  var UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  /* Two decimals rounded as the text report's printf rounds them: a
     value exactly halfway (78.125 GiB) goes to the even digit, so both
     reports print the same number. */
  function fixed2(v) {
    var x = Math.abs(v) * 100, f = Math.floor(x), d = x - f;
    var r = d > 0.5 ? f + 1 : d < 0.5 ? f : (f % 2 ? f + 1 : f);
    return (v < 0 ? '-' : '') + (r / 100).toFixed(2);
  }
  function bytes(b) {
    if (!num(b)) return '-';
    if (Math.abs(b) < 1024) return Math.round(b) + ' B';
    var u = -1;
    do { b /= 1024; u++; } while (Math.abs(b) >= 1024 && u < UNITS.length - 1);
    return fixed2(b) + ' ' + UNITS[u];
  }
  /* Seconds since the run started, as the text report prints them. */
  function secs(s) {
    if (!num(s)) return '-';
    return (s !== 0 && Math.abs(s) < 0.01 ? s.toFixed(6) : s.toFixed(3)) + ' s';
  }
  function pct(a, b) { return b ? (100 * a / b).toFixed(1) + '%' : ''; }

  /* Wall-clock times: a key's own *_utc string when the report has one,
     else the run's start_utc plus the seconds. ISO 8601 with any number
     of fraction digits (Date.parse keeps at most milliseconds). */
  function parseUtc(s) {
    if (typeof s !== 'string') return null;
    var m = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$/.exec(s);
    if (!m) return null;
    var ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) + (m[7] ? parseFloat(m[7]) * 1000 : 0);
    if (m[8] && m[8] !== 'Z') {
      var sign = m[8].charAt(0) === '-' ? -1 : 1;
      ms -= sign * (+m[8].slice(1, 3) * 60 + +m[8].slice(-2)) * 60000;
    }
    return ms;
  }
  /* hh:mm:ss with digits (0 to 6) of the second: Date keeps
     milliseconds, so finer digits come from ms itself. */
  function clock(ms, digits, withDate) {
    var sec = Math.floor(ms / 1000);
    var iso = new Date(sec * 1000).toISOString();
    var t = iso.slice(11, 19);
    if (digits) t += ((ms - sec * 1000) / 1000).toFixed(Math.min(6, digits)).slice(1);
    return (withDate ? iso.slice(0, 10) + ' ' : '') + t;
  }

  /* ---- the data ---- */
  var node = document.getElementById('vramtrace-data');
  var R = null;
  try {
    R = node ? JSON.parse(node.textContent) : null;
  } catch (e) {
    R = null;
  }
  if (!isObj(R)) {
    add(document.querySelector('main'), el('p', {'class': 'note'}, 'This report holds no data (the analyzer could not write it).'));
    body.setAttribute('data-rendered', 'empty');
    return;
  }
  var run = isObj(R.run) ? R.run : {};
  var duration = num(run.duration_s) && run.duration_s > 0 ? run.duration_s : 1;
  var startMs = parseUtc(run.start_utc);
  /* Wall clock of s seconds into the run ('' when the start is unknown). */
  function wall(s, utc, digits) {
    var ms = parseUtc(utc);
    if (ms === null && startMs !== null && num(s)) ms = startMs + s * 1000;
    return ms === null ? '' : clock(ms, digits === undefined ? 3 : digits) + ' UTC';
  }
  /* A table cell with the relative time and, below, the wall clock. */
  function timeCell(s, utc) {
    var td = el('td', {'class': 'time'}, secs(s));
    var w = wall(s, utc);
    if (w) add(td, el('span', {'class': 'sub'}, w));
    return td;
  }
  var devices = arr(R.devices).filter(isObj);
  var ooms = arr(R.ooms).filter(isObj);
  var failures = arr(R.failures).filter(isObj);
  var marks = arr(R.marks).filter(isObj);
  var windows = arr(R.windows).filter(isObj);
  var processes = arr(run.processes).filter(isObj);
  var requests = isObj(R.requests) ? R.requests : {};
  var diagnosis = isObj(R.diagnosis) ? R.diagnosis : null;
  /* a program that never served (diagnosis.server false): no server's
     parts, the failing call first */
  var notServer = !!diagnosis && diagnosis.server === false;
  var hasRequests = (requests.connections || 0) > 0 || (requests.annotated || 0) > 0;
  var listen = isObj(R.listen) ? R.listen : null;
  /* listening is not being ready (docs/requests.md) */
  var readyS = num(R.server_ready_s) ? R.server_ready_s : null;

  function cmdline(p) {
    var a = arr(p.cmdline);
    if (!a.length) return p.exe || '';
    return a.map(function (x) {
      x = String(x);
      return /^[\w@%+=:,./-]+$/.test(x) ? x : "'" + x.replace(/'/g, "'\\''") + "'";
    }).join(' ');
  }

  /* ---- phases and colours ---- */
  var COLORS = {
    'weights': '#4e79a7', 'kv_cache': '#f28e2b', 'kv_cache (inferred)': '#ffbe7d',
    'forward': '#59a14f', 'profile': '#edc948', 'cuda_graph': '#b07aa1',
    'comm': '#76b7b2', 'workspace': '#ff9da7', 'unattributed': '#a5a5a5'
  };
  /* No red: red means out of memory. */
  var EXTRA = ['#8cd17d', '#d37295', '#a0cbe8', '#b6992d', '#499894', '#d4a6c8', '#86bcb6', '#9d7660', '#79706e', '#bab0ac'];
  var nextExtra = 0;
  /* Bottom to top: what stays resident first, per-request memory last. */
  var ORDER = ['weights', 'kv_cache', 'kv_cache (inferred)', 'cuda_graph', 'comm', 'workspace', 'profile', 'forward'];
  function color(name) {
    if (!Object.prototype.hasOwnProperty.call(COLORS, name)) COLORS[name] = EXTRA[nextExtra++ % EXTRA.length];
    return COLORS[name];
  }
  function rank(name) {
    if (name === 'unattributed') return 1000;
    var i = ORDER.indexOf(name);
    return i < 0 ? 500 : i;
  }
  function byRank(a, b) { return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0); }
  function swatch(name) { return el('span', {'class': 'sw', style: 'background:' + color(name)}); }

  /* ---- timelines: the model of each device ---- */
  var TL = isObj(R.timeline) ? R.timeline : {};
  var bucketS = num(TL.bucket_s) ? TL.bucket_s : 0;
  function numbers(a) { return arr(a).map(function (v) { return num(v) ? v : 0; }); }
  function deviceModel(d) {
    var x = arr(TL.devices).filter(function (y) { return isObj(y) && y.id === d.id; })[0];
    if (!x) return null;
    var pts = isObj(x.points) ? x.points : {}, bk = isObj(x.buckets) ? x.buckets : {};
    var bp = isObj(pts.by_phase) ? pts.by_phase : {};
    var m = {dev: d, t: numbers(pts.time_s), v: {}, phases: Object.keys(bp).sort(byRank),
             bs: numbers(bk.start_s), bminT: numbers(bk.min_total), bmaxT: numbers(bk.max_total),
             bmin: {}, bmax: {}};
    m.phases.forEach(function (p) {
      m.v[p] = numbers(bp[p]);
      m.bmin[p] = numbers(get(bk.min_by_phase, p));
      m.bmax[p] = numbers(get(bk.max_by_phase, p));
    });
    return m;
  }
  var models = devices.map(deviceModel).filter(function (m) { return m && m.phases.length && m.t.length; });
  var inflight = isObj(TL.inflight) ? {t: numbers(TL.inflight.time_s), v: numbers(TL.inflight.requests)} : {t: [], v: []};
  var allPhases = [];
  models.forEach(function (m) {
    m.phases.forEach(function (p) { if (allPhases.indexOf(p) < 0) allPhases.push(p); });
  });
  allPhases.sort(byRank);
  var hidden = {};
  var mode = 'stacked';

  /* The last index of sorted a whose value is below x (-1: none). */
  function lastBelow(a, x) {
    var lo = 0, hi = a.length - 1, ans = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (a[mid] < x) { ans = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return ans;
  }

  /*
   * Device m's visible phases (vis) over [t0, t1] in ncol columns. Per
   * column: rep, the point drawn (the largest sum of vis; -1 the empty
   * state before the first point), its sum and the least sum (lo); per
   * phase, the most and least it held in the column (pmax, pmin), from the
   * points and from every report bucket overlapping the column. A column
   * starts with the state its first moment had (the last point before it).
   */
  function aggregate(m, vis, t0, t1, ncol) {
    var n = m.t.length, P = vis.length, cw = (t1 - t0) / ncol, q, v;
    var S = new Float64Array(n), vals = vis.map(function (p) { return m.v[p]; });
    for (q = 0; q < P; q++) for (var i0 = 0; i0 < n; i0++) S[i0] += vals[q][i0] || 0;
    var out = {rep: new Int32Array(ncol), sum: new Float64Array(ncol), lo: new Float64Array(ncol),
               pmax: vis.map(function () { return new Float64Array(ncol); }),
               pmin: vis.map(function () { return new Float64Array(ncol); }), t0: t0, cw: cw};
    var all = P === m.phases.length;
    var i = lastBelow(m.t, t0), nb = m.bs.length, k = 0, w = bucketS;
    for (var j = 0; j < ncol; j++) {
      var a = t0 + j * cw, b = j === ncol - 1 ? t1 : a + cw;
      var best = i, bsum = i < 0 ? 0 : S[i], lo = bsum;
      for (q = 0; q < P; q++) out.pmax[q][j] = out.pmin[q][j] = i < 0 ? 0 : vals[q][i];
      while (i + 1 < n && (m.t[i + 1] < b || (j === ncol - 1 && m.t[i + 1] <= b))) {
        i++;
        if (S[i] > bsum) { bsum = S[i]; best = i; }
        if (S[i] < lo) lo = S[i];
        for (q = 0; q < P; q++) {
          v = vals[q][i];
          if (v > out.pmax[q][j]) out.pmax[q][j] = v;
          if (v < out.pmin[q][j]) out.pmin[q][j] = v;
        }
      }
      while (k < nb && m.bs[k] + w <= a) k++;
      for (var kk = k; kk < nb && m.bs[kk] < b; kk++) {
        for (q = 0; q < P; q++) {
          v = m.bmax[vis[q]][kk] || 0;
          if (v > out.pmax[q][j]) out.pmax[q][j] = v;
          v = m.bmin[vis[q]][kk];
          if (v !== undefined && v < out.pmin[q][j]) out.pmin[q][j] = v;
        }
        if (all && m.bminT[kk] < lo) lo = m.bminT[kk];
      }
      out.rep[j] = best;
      out.sum[j] = bsum;
      out.lo[j] = lo;
    }
    return out;
  }

  /* ---- the view ---- */
  var view = {t0: 0, t1: duration};
  var MIN_SPAN = 1e-6;
  /* Where memory changes: the run cut at its long idle gaps, from the
     first stretch to the last one in which memory rose or an allocation
     failed (a teardown that only frees, long after, is left out). */
  function activity() {
    var ev = [];
    models.forEach(function (m) {
      var prev = 0;
      for (var i = 0; i < m.t.length; i++) {
        var s = 0;
        m.phases.forEach(function (p) { s += m.v[p][i]; });
        ev.push({t: m.t[i], rise: s > prev});
        prev = s;
      }
    });
    ooms.forEach(function (o) { if (num(o.time_s)) ev.push({t: o.time_s, rise: true}); });
    if (!ev.length) return {t0: 0, t1: duration};
    ev.sort(function (a, b) { return a.t - b.t; });
    var first = ev[0].t, span = ev[ev.length - 1].t - first, gap = Math.max(span * 0.2, 1e-9);
    var segStart = first, end = null, segEnd = first, segRise = false;
    for (var i = 0; i <= ev.length; i++) {
      if (i === ev.length || ev[i].t - segEnd > gap) {
        if (segRise) end = segEnd;
        if (i === ev.length) break;
        segStart = ev[i].t;
        segRise = false;
      }
      segEnd = ev[i].t;
      segRise = segRise || ev[i].rise;
    }
    if (end === null) end = ev[ev.length - 1].t;
    var lo = first, hi = end, w = hi - lo;
    if (w <= 0) w = Math.max(duration * 0.01, 1e-3);
    lo = lo - w * 0.04;
    hi = hi + w * 0.04;
    if (lo < w * 0.25) lo = 0;
    if (hi > duration) hi = duration;
    if (hi - lo > duration * 0.9) return {t0: 0, t1: duration};
    return {t0: Math.max(0, lo), t1: Math.min(duration, hi)};
  }
  var fit = activity();
  function setView(t0, t1) {
    var span = Math.max(MIN_SPAN, Math.min(duration, t1 - t0));
    if (!(span > 0)) span = duration;
    var c = (t0 + t1) / 2;
    t0 = c - span / 2;
    if (t0 < 0) t0 = 0;
    if (t0 + span > duration) t0 = duration - span;
    view.t0 = Math.max(0, t0);
    view.t1 = view.t0 + span;
    scheduleDraw();
  }
  function zoom(factor, at) {
    if (!num(at)) at = (view.t0 + view.t1) / 2;
    var span = (view.t1 - view.t0) * factor;
    var f = (at - view.t0) / (view.t1 - view.t0);
    setView(at - f * span, at - f * span + span);
  }
  function pan(fraction) {
    var d = (view.t1 - view.t0) * fraction;
    var t0 = Math.min(Math.max(0, view.t0 + d), duration - (view.t1 - view.t0));
    setView(t0, t0 + (view.t1 - view.t0));
  }

  /* ---- time axis ---- */
  var STEPS = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  function timeStep(span, maxTicks) {
    var raw = span / Math.max(1, maxTicks);
    if (raw > 30) {
      for (var i = 0; i < STEPS.length; i++) if (STEPS[i] >= raw) return STEPS[i];
      return Math.ceil(raw / 86400) * 86400;
    }
    var base = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var m = raw / base;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * base;
  }
  function tickLabel(v, step) {
    if (step >= 60) {
      var h = Math.floor(v / 3600), mi = Math.floor(v % 3600 / 60), s = Math.round(v % 60);
      return (h ? h + ':' + (mi < 10 ? '0' : '') : '') + mi + ':' + (s < 10 ? '0' : '') + s;
    }
    var dec = Math.max(0, Math.min(9, -Math.floor(Math.log(step) / Math.LN10 + 1e-9)));
    return v.toFixed(dec) + ' s';
  }
  function byteTicks(max, n) {
    if (!(max > 0)) return [0];
    var raw = max / n, base = Math.pow(1024, Math.floor(Math.log(raw) / Math.log(1024)));
    var mults = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], step = base * 1024;
    for (var i = 0; i < mults.length; i++) if (base * mults[i] >= raw) { step = base * mults[i]; break; }
    var out = [];
    for (var v = 0; v <= max * 1.0001; v += step) out.push(v);
    return out;
  }

  /* ---- label lanes: marker labels never overlap ---- */
  var measureCtx = document.createElement('canvas').getContext('2d');
  function textWidth(s, weight) {
    if (!measureCtx) return s.length * 6.5;
    measureCtx.font = (weight || '') + ' 11px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
    return measureCtx.measureText(s).width;
  }
  /* items: {x, text, cls, prio}; each gets .lane and .x0 (its left end),
     or .lane = -1 when it fits in no lane (its line keeps a tooltip). */
  function layoutLabels(items, left, right, lanes) {
    var placed = [];
    for (var l = 0; l < lanes; l++) placed.push([]);
    var used = 0;
    items.slice().sort(function (a, b) { return a.prio - b.prio || a.x - b.x; }).forEach(function (it) {
      var w = textWidth(it.text, it.cls === 'oom' ? '600' : '') + 2;
      var x0 = it.x + 4;
      if (x0 + w > right) x0 = it.x - 4 - w;
      if (x0 < left) x0 = Math.max(left, Math.min(right - w, it.x - w / 2));
      it.x0 = x0;
      it.w = w;
      it.lane = -1;
      for (var l = 0; l < lanes; l++) {
        var free = placed[l].every(function (p) { return x0 + w + 6 <= p[0] || x0 >= p[1] + 6; });
        if (free) {
          placed[l].push([x0, x0 + w]);
          it.lane = l;
          if (l + 1 > used) used = l + 1;
          break;
        }
      }
    });
    return used;
  }

  /* ---- drawing ---- */
  var tip = document.getElementById('tooltip');
  var COLW = 2;
  function showTip(ev, rows) {
    clear(tip);
    rows.forEach(function (r) { add(tip, r); });
    tip.hidden = false;
    var tx = ev.clientX + 14, ty = ev.clientY + 12;
    if (tx + tip.offsetWidth > window.innerWidth - 8) tx = ev.clientX - tip.offsetWidth - 14;
    if (ty + tip.offsetHeight > window.innerHeight - 8) ty = ev.clientY - tip.offsetHeight - 12;
    tip.style.left = Math.max(4, tx) + 'px';
    tip.style.top = Math.max(4, ty) + 'px';
  }
  function hideTip() { tip.hidden = true; }

  function otherBytes(d) {
    var b = num(d.baseline_used_bytes) ? d.baseline_used_bytes : 0;
    arr(diagnosis && diagnosis.devices).forEach(function (x) {
      if (isObj(x) && x.id === d.id && num(x.other_processes_bytes) && x.other_processes_bytes > b) b = x.other_processes_bytes;
    });
    return b;
  }
  function deviceTitle(d) {
    var s = 'device ' + d.id + ': ' + (d.name || '(unnamed)');
    if (isObj(d.peak) && d.peak.before_recording) s += ' [peak at the first snapshot: a lower bound]';
    if (d.host && arr(run.hosts).length > 1) s += ' on ' + d.host;
    if (num(d.total_bytes)) s += ' (' + bytes(d.total_bytes) + ')';
    return s;
  }
  function peakOf(d) { return isObj(d.peak) && num(d.peak.tracked_bytes) ? d.peak.tracked_bytes : 0; }

  /* One step path over columns: y(j) per column, from x0, colw wide. */
  function stepEdge(ys, x0, colw, from, to, backwards) {
    var p = [];
    if (!backwards) {
      for (var j = from; j < to; j++) {
        if (j === from || ys[j] !== ys[j - 1]) p.push('V' + ys[j].toFixed(1));
        if (j === to - 1 || ys[j + 1] !== ys[j]) p.push('H' + (x0 + (j + 1) * colw).toFixed(1));
      }
    } else {
      for (var k = to - 1; k >= from; k--) {
        if (k === to - 1 || ys[k] !== ys[k + 1]) p.push('V' + ys[k].toFixed(1));
        if (k === from || ys[k - 1] !== ys[k]) p.push('H' + (x0 + k * colw).toFixed(1));
      }
    }
    return p.join('');
  }
  /* Rectangles per column where top[j] < bottom[j] (y grows down),
     merged across neighbours of the same height. */
  function rects(top, bottom, x0, colw) {
    var p = [], n = top.length;
    for (var j = 0; j < n; j++) {
      if (!(bottom[j] - top[j] >= 0.5)) continue;
      var k = j;
      while (k + 1 < n && top[k + 1] === top[j] && bottom[k + 1] === bottom[j]) k++;
      p.push('M' + (x0 + j * colw).toFixed(1) + ',' + bottom[j].toFixed(1) + 'V' + top[j].toFixed(1) +
             'H' + (x0 + (k + 1) * colw).toFixed(1) + 'V' + bottom[j].toFixed(1) + 'Z');
      j = k;
    }
    return p.join('');
  }

  function drawDevice(box, m, width) {
    var d = m.dev, vis = m.phases.filter(function (p) { return !hidden[p]; });
    var peak = peakOf(d), cap = num(d.total_bytes) ? d.total_bytes : null;
    var showCap = cap && peak >= cap / 3 && mode === 'stacked';
    var ymax;
    if (mode === 'stacked') {
      ymax = peak > 0 ? peak * 1.1 : 1024 * 1024 * 1024;
      if (showCap) ymax = Math.max(ymax, cap * 1.04);
    } else {
      ymax = 0;
      vis.forEach(function (p) {
        var c = get(d.phases, p);
        if (isObj(c) && num(c.peak_bytes) && c.peak_bytes > ymax) ymax = c.peak_bytes;
      });
      ymax = ymax > 0 ? ymax * 1.1 : 1024 * 1024 * 1024;
    }
    var W = width, L = 84, Rm = 16, pw = Math.max(80, W - L - Rm);
    var ncol = Math.max(1, Math.floor(pw / COLW)), colw = pw / ncol;
    var t0 = view.t0, t1 = view.t1, span = t1 - t0;
    function X(t) { return L + pw * (t - t0) / span; }
    function inView(t) { return num(t) && t >= t0 && t <= t1; }

    /* marker labels first: they decide the top margin */
    var items = [];
    ooms.forEach(function (o) {
      if ((o.device === d.id || o.device === -1) && inView(o.time_s))
        items.push({x: X(o.time_s), text: 'OOM ' + bytes(o.requested_bytes), cls: 'oom', prio: 0});
    });
    if (inView(readyS)) items.push({x: X(readyS), text: 'ready', cls: 'ready', prio: 1});
    marks.forEach(function (mk) {
      if (inView(mk.time_s)) {
        var lab = String(mk.label || '');
        items.push({x: X(mk.time_s), text: lab.length > 40 ? lab.slice(0, 39) + '\u2026' : lab, cls: 'mark', prio: 2, full: lab});
      }
    });
    var lanes = layoutLabels(items, L, L + pw, 3);
    var LANE = 14, top = 8 + lanes * LANE + 4;
    var ph = 220, rh = hasRequests ? 48 : 0, gapR = rh ? 12 : 0;
    var utcRow = startMs !== null ? 13 : 0;
    var bottom = top + ph + gapR + rh;
    var H = bottom + 20 + utcRow;
    function Y(b) { return top + ph - ph * Math.max(0, Math.min(1.02, b / ymax)); }

    var svg = sv('svg', {'class': 'timeline', 'data-device': d.id, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H,
                         role: 'img', 'data-plot-left': L, 'data-plot-top': top, 'data-plot-width': pw,
                         'data-plot-height': ph, 'data-ymax': ymax, 'data-view-start': t0, 'data-view-end': t1,
                         'data-mode': mode});
    add(svg, sv('title', null, 'device ' + d.id + ': live bytes by phase over time'));
    var clipId = 'clip-' + d.id;
    add(svg, add(sv('defs'), add(sv('clipPath', {id: clipId}), sv('rect', {x: L, y: top - 2, width: pw, height: bottom - top + 4}))));

    /* grid and axes */
    var grid = sv('g', {'class': 'grid'}), axis = sv('g', {'class': 'axis'});
    byteTicks(ymax, 4).forEach(function (v) {
      add(grid, sv('line', {x1: L, x2: L + pw, y1: Y(v), y2: Y(v)}));
      add(axis, sv('text', {x: L - 6, y: Y(v) + 4, 'text-anchor': 'end'}, bytes(v)));
    });
    var step = timeStep(span, Math.max(2, Math.floor(pw / 110)));
    /* as many digits of the second as the ticks are apart, so no two
       wall-clock labels read the same */
    var clkDigits = step >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log(step) / Math.LN10 - 1e-9));
    for (var tv = Math.ceil(t0 / step) * step; tv <= t1 + step * 1e-9; tv += step) {
      var tx = X(tv), lab = tickLabel(tv, step), clk = utcRow ? wall(tv, null, clkDigits).replace(' UTC', '') : '';
      /* labels at the ends stay inside the chart */
      var half = Math.max(textWidth(lab), textWidth(clk)) / 2;
      var anchor = tx - half < 0 ? 'start' : tx + half > W ? 'end' : 'middle', ax = anchor === 'start' ? Math.max(0, tx - 4) : anchor === 'end' ? W - 1 : tx;
      add(grid, sv('line', {x1: tx, x2: tx, y1: top, y2: bottom}));
      add(axis, sv('text', {x: ax, y: bottom + 15, 'text-anchor': anchor}, lab));
      if (utcRow) add(axis, sv('text', {'class': 'utc', x: ax, y: bottom + 28, 'text-anchor': anchor}, clk));
    }
    if (utcRow) add(axis, sv('text', {'class': 'utc', x: 2, y: bottom + 28}, 'UTC'));
    add(axis, sv('path', {d: 'M' + L + ',' + top + 'V' + (top + ph) + 'H' + (L + pw)}));
    add(svg, grid, axis);

    /* the series */
    var agg = aggregate(m, vis, t0, t1, ncol);
    var layer = sv('g', {'class': 'series', 'clip-path': 'url(#' + clipId + ')'});
    var ranges = sv('g', {'class': 'ranges', 'clip-path': 'url(#' + clipId + ')'});
    var ys = new Array(ncol), lower = new Float64Array(ncol), j, q;
    if (mode === 'stacked') {
      var lowY = new Array(ncol);
      for (j = 0; j < ncol; j++) lowY[j] = Y(0);
      vis.forEach(function (p, qi) {
        var upY = new Array(ncol), rTop = new Array(ncol), rBot = new Array(ncol), vals = m.v[p];
        for (j = 0; j < ncol; j++) {
          var v = agg.rep[j] < 0 ? 0 : vals[agg.rep[j]];
          upY[j] = Y(lower[j] + v);
          rBot[j] = upY[j];
          rTop[j] = agg.pmax[qi][j] > v ? Y(lower[j] + agg.pmax[qi][j]) : upY[j];
          lower[j] += v;
        }
        var dd = 'M' + L + ',' + lowY[0].toFixed(1) + stepEdge(upY, L, colw, 0, ncol, false) +
                 stepEdge(lowY, L, colw, 0, ncol, true) + 'Z';
        add(layer, sv('path', {'class': 'series', 'data-phase': p, 'data-device': d.id, fill: color(p), d: dd}));
        var rd = rects(rTop, rBot, L, colw);
        if (rd) add(ranges, sv('path', {'class': 'range', 'data-phase': p, 'data-device': d.id, fill: color(p), stroke: color(p), d: rd}));
        lowY = upY;
      });
      add(svg, layer, ranges);
      for (j = 0; j < ncol; j++) ys[j] = Y(agg.sum[j]);
      add(svg, sv('path', {'class': 'total', 'clip-path': 'url(#' + clipId + ')', d: 'M' + L + ',' + ys[0].toFixed(1) + stepEdge(ys, L, colw, 0, ncol, false)}));
      /* the least total in each column, where it is below what is drawn */
      var mins = [];
      for (j = 0; j < ncol; j++) {
        if (agg.sum[j] - agg.lo[j] > ymax / ph * 0.5) {
          var y = Y(agg.lo[j]).toFixed(1);
          mins.push('M' + (L + j * colw).toFixed(1) + ',' + y + 'H' + (L + (j + 1) * colw).toFixed(1));
        }
      }
      if (mins.length) add(svg, sv('path', {'class': 'total-min', d: mins.join('')}));
    } else {
      vis.forEach(function (p, qi) {
        var hi = new Array(ncol), lo = new Array(ncol);
        for (j = 0; j < ncol; j++) {
          hi[j] = Y(agg.pmax[qi][j]);
          lo[j] = Y(agg.pmin[qi][j]);
        }
        add(ranges, sv('path', {'class': 'band range', 'data-phase': p, 'data-device': d.id, fill: color(p), d: rects(hi, lo, L, colw)}));
        add(layer, sv('path', {'class': 'series line', 'data-phase': p, 'data-device': d.id, stroke: color(p),
                                d: 'M' + L + ',' + hi[0].toFixed(1) + stepEdge(hi, L, colw, 0, ncol, false)}));
      });
      add(svg, ranges, layer);
    }

    /* capacity, and what other processes left for this run */
    var inplot = [];
    if (showCap) {
      add(svg, sv('line', {'class': 'capacity', x1: L, x2: L + pw, y1: Y(cap), y2: Y(cap)}));
      add(svg, sv('text', {'class': 'capacity', x: L + 4, y: Y(cap) - 4}, 'capacity ' + bytes(cap)));
      inplot.push([L + 4, Y(cap) - 15, L + 8 + textWidth('capacity ' + bytes(cap)), Y(cap)]);
      var other = otherBytes(d);
      if (other && other < cap) {
        var av = cap - other, avText = 'left for this run ' + bytes(av) + ' (' + bytes(other) + ' held by other processes)';
        add(svg, sv('line', {'class': 'available', x1: L, x2: L + pw, y1: Y(av), y2: Y(av)}));
        var ay = Y(av) + 12;
        if (ay - 10 < Y(cap) + 2) ay = Y(cap) + 14;
        add(svg, sv('text', {'class': 'available', x: L + 4, y: ay}, avText));
        inplot.push([L + 4, ay - 11, L + 8 + textWidth(avText), ay + 2]);
      }
    }
    /* the device's peak */
    var peakS = isObj(d.peak) ? d.peak.time_s : null;
    if (mode === 'stacked' && peak > 0 && inView(peakS) && vis.length === m.phases.length) {
      var px = X(peakS), py = Y(peak), ptxt = 'peak ' + bytes(peak), pwid = textWidth(ptxt);
      add(svg, sv('circle', {'class': 'peak', cx: px, cy: py, r: 3.5}));
      var right = px + 8 + pwid <= L + pw;
      var lx = right ? px + 7 : px - 7 - pwid, ly = py - 6;
      var hit = inplot.some(function (b) { return lx < b[2] && lx + pwid > b[0] && ly - 10 < b[3] && ly > b[1]; });
      if (hit) ly = py + 15;
      add(svg, sv('text', {'class': 'peak', x: lx, y: ly}, ptxt));
    }

    /* requests in flight: a strip under the chart */
    if (rh) {
      var top0 = top + ph + gapR, maxr = Math.max(1, requests.max_inflight || 1);
      var RY = function (v) { return top0 + rh - rh * v / maxr; };
      var ri = lastBelow(inflight.t, t0), rys = new Array(ncol);
      for (j = 0; j < ncol; j++) {
        var a = t0 + j * agg.cw, b = j === ncol - 1 ? t1 + 1e-12 : a + agg.cw, mx = ri < 0 ? 0 : inflight.v[ri];
        while (ri + 1 < inflight.t.length && inflight.t[ri + 1] < b) { ri++; if (inflight.v[ri] > mx) mx = inflight.v[ri]; }
        rys[j] = RY(mx);
      }
      var zero = new Array(ncol);
      for (j = 0; j < ncol; j++) zero[j] = RY(0);
      add(svg, sv('line', {x1: L, x2: L + pw, y1: top0 + rh, y2: top0 + rh, stroke: '#9aa5b1'}));
      add(svg, sv('path', {'class': 'inflight', 'data-device': d.id,
                           d: 'M' + L + ',' + RY(0) + stepEdge(rys, L, colw, 0, ncol, false) + stepEdge(zero, L, colw, 0, ncol, true) + 'Z'}));
      add(svg, sv('text', {x: L - 6, y: top0 + 10, 'text-anchor': 'end'}, maxr + ' req'));
      add(svg, sv('text', {x: L - 6, y: top0 + rh, 'text-anchor': 'end'}, 'in flight'));
    }

    /* markers: out of memory, server ready, marks; labels in lanes */
    var mg = sv('g', {'class': 'markers'});
    function markerLine(cls, t, title) {
      var x = X(t);
      add(mg, add(sv('line', {'class': 'marker ' + cls, x1: x, x2: x, y1: top, y2: bottom}), sv('title', null, title)));
      return x;
    }
    ooms.forEach(function (o) {
      if (!((o.device === d.id || o.device === -1) && inView(o.time_s))) return;
      var fatal = o.fatal === false ? ' (recovered)' : '';
      var x = markerLine('oom', o.time_s, 'out of memory' + fatal + ': ' + bytes(o.requested_bytes) + ' by ' + o.api + ' at ' + secs(o.time_s));
      add(mg, sv('path', {'class': 'oom', d: 'M' + (x - 5) + ',' + (top - 1) + 'L' + (x + 5) + ',' + (top - 1) + 'L' + x + ',' + (top + 7) + 'Z'}));
    });
    if (inView(readyS)) markerLine('ready', readyS, 'server ready at ' + secs(readyS));
    marks.forEach(function (mk) {
      if (inView(mk.time_s)) markerLine('mark', mk.time_s, 'mark ' + String(mk.label || '') + ' at ' + secs(mk.time_s));
    });
    items.forEach(function (it) {
      if (it.lane < 0) return;
      var y = 8 + it.lane * LANE + 10;
      add(mg, add(sv('text', {'class': 'label ' + it.cls, x: it.x0, y: y}, it.text), it.full && it.full !== it.text ? sv('title', null, it.full) : null));
    });
    add(svg, mg);

    /* pointer: tooltip, brush, pan, wheel */
    var cursor = sv('line', {'class': 'cursor', x1: 0, x2: 0, y1: top, y2: bottom, visibility: 'hidden'});
    var brush = sv('rect', {'class': 'brush', x: 0, y: top, width: 0, height: bottom - top, visibility: 'hidden'});
    var hover = sv('rect', {'class': 'hover', x: L, y: top, width: pw, height: bottom - top});
    add(svg, cursor, brush, hover);
    /* x in the chart of a pointer event; r: the chart's box, taken when a
       drag starts (the chart is redrawn under a pan, the old one gone) */
    function plotX(ev, r) {
      r = r || svg.getBoundingClientRect();
      return Math.max(L, Math.min(L + pw, (ev.clientX - r.left) * W / r.width));
    }
    function timeAt(x) { return t0 + (x - L) / pw * span; }
    hover.addEventListener('mousemove', function (ev) {
      if (drag) return;
      var x = plotX(ev), jj = Math.max(0, Math.min(ncol - 1, Math.floor((x - L) / colw)));
      cursor.setAttribute('x1', x);
      cursor.setAttribute('x2', x);
      cursor.setAttribute('visibility', 'visible');
      var a = t0 + jj * agg.cw, b = a + agg.cw, rows = [];
      var head = el('div', null, 'device ' + d.id + ', ' + secs(a) + ' \u2013 ' + secs(b));
      var w = wall(a);
      if (w) add(head, el('div', {'class': 'sub'}, w));
      rows.push(head);
      var tb = el('table');
      add(tb, add(el('tr'), el('td', null, 'total'), el('td', {'class': 'num'}, bytes(agg.sum[jj])),
                  el('td', {'class': 'num sub'}, agg.lo[jj] < agg.sum[jj] ? 'least ' + bytes(agg.lo[jj]) : '')));
      for (var qi = vis.length - 1; qi >= 0; qi--) {
        var p = vis[qi], v = agg.rep[jj] < 0 ? 0 : m.v[p][agg.rep[jj]];
        var hi = agg.pmax[qi][jj], lo = agg.pmin[qi][jj];
        if (!v && !hi) continue;
        add(tb, add(el('tr'), add(el('td', {'class': 'phase'}), swatch(p), ' ' + p), el('td', {'class': 'num'}, bytes(v)),
                    el('td', {'class': 'num sub'}, hi > v || lo < v ? bytes(lo) + ' \u2013 ' + bytes(hi) : '')));
      }
      if (hasRequests) {
        var ri2 = lastBelow(inflight.t, b);
        add(tb, add(el('tr'), el('td', null, 'in flight'), el('td', {'class': 'num'}, ri2 < 0 ? 0 : inflight.v[ri2]), el('td')));
      }
      rows.push(tb);
      showTip(ev, rows);
    });
    hover.addEventListener('mouseleave', function () {
      hideTip();
      cursor.setAttribute('visibility', 'hidden');
    });
    hover.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      ev.preventDefault();
      hideTip();
      var x = plotX(ev);
      drag = {brush: brush, x0: x, x: x, pan: ev.shiftKey, v0: view.t0, v1: view.t1,
              pxToT: span / pw, plotX: plotX, box: svg.getBoundingClientRect(), timeAt: timeAt};
      if (!drag.pan) {
        brush.setAttribute('x', x);
        brush.setAttribute('width', 0);
        brush.setAttribute('visibility', 'visible');
      }
    });
    hover.addEventListener('dblclick', function (ev) {
      ev.preventDefault();
      setView(fit.t0, fit.t1);
    });
    hover.addEventListener('wheel', function (ev) {
      var dx = ev.deltaX, dy = ev.deltaY;
      if (ev.ctrlKey || ev.metaKey) {
        ev.preventDefault();
        zoom(Math.exp(Math.max(-1, Math.min(1, dy * 0.002))), timeAt(plotX(ev)));
      } else if (ev.shiftKey || Math.abs(dx) > Math.abs(dy)) {
        ev.preventDefault();
        pan((Math.abs(dx) > Math.abs(dy) ? dx : dy) / pw);
      }
    }, {passive: false});
    add(box, svg);
    return vis.length;
  }

  /* One drag at a time, followed on the document so it may leave the chart. */
  var drag = null;
  document.addEventListener('mousemove', function (ev) {
    if (!drag) return;
    var x = drag.plotX(ev, drag.box);
    drag.x = x;
    if (drag.pan) {
      var d = (drag.x0 - x) * drag.pxToT;
      var s = drag.v1 - drag.v0, t0 = Math.min(Math.max(0, drag.v0 + d), duration - s);
      setView(t0, t0 + s);
    } else {
      drag.brush.setAttribute('x', Math.min(drag.x0, x));
      drag.brush.setAttribute('width', Math.abs(x - drag.x0));
    }
  });
  document.addEventListener('mouseup', function () {
    if (!drag) return;
    var g = drag;
    drag = null;
    if (g.pan) return;
    g.brush.setAttribute('visibility', 'hidden');
    if (Math.abs(g.x - g.x0) >= 3) {
      var a = g.timeAt(Math.min(g.x0, g.x)), b = g.timeAt(Math.max(g.x0, g.x));
      setView(a, b);
    } else if (g.click) {
      g.click(g.timeAt(g.x0));
    }
  });

  /* The whole run, small, with the view as a window to drag. */
  function drawOverview(box, width) {
    clear(box);
    if (!models.length) return;
    var W = width, L = 84, Rm = 16, pw = Math.max(80, W - L - Rm), H = 46, top = 4, ph = 30;
    var ncol = Math.max(1, Math.floor(pw / 3)), colw = pw / ncol;
    function X(t) { return L + pw * t / duration; }
    var svg = sv('svg', {'class': 'overview', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H});
    add(svg, sv('title', null, 'the whole run: drag the window to pan, drag elsewhere to choose a span'));
    add(svg, sv('text', {x: L - 6, y: top + 18, 'text-anchor': 'end'}, 'whole run'));
    add(svg, sv('rect', {x: L, y: top, width: pw, height: ph, fill: '#fff', stroke: '#d9dee5'}));
    models.forEach(function (m) {
      var agg = aggregate(m, m.phases, 0, duration, ncol), peak = peakOf(m.dev) || 1, ys = new Array(ncol), base = new Array(ncol);
      for (var j = 0; j < ncol; j++) {
        ys[j] = top + ph - ph * Math.min(1, agg.sum[j] / peak);
        base[j] = top + ph;
      }
      add(svg, sv('path', {'class': 'overview', 'data-device': m.dev.id,
                           d: 'M' + L + ',' + (top + ph) + stepEdge(ys, L, colw, 0, ncol, false) + stepEdge(base, L, colw, 0, ncol, true) + 'Z'}));
    });
    ooms.forEach(function (o) {
      if (num(o.time_s)) add(svg, sv('line', {'class': 'tick oom', x1: X(o.time_s), x2: X(o.time_s), y1: top + ph, y2: top + ph + 8}));
    });
    marks.forEach(function (mk) {
      if (num(mk.time_s)) add(svg, sv('line', {'class': 'tick mark', x1: X(mk.time_s), x2: X(mk.time_s), y1: top + ph, y2: top + ph + 6}));
    });
    var wx = X(view.t0), ww = Math.max(3, X(view.t1) - wx);
    add(svg, sv('rect', {'class': 'shade', x: L, y: top, width: Math.max(0, wx - L), height: ph}));
    add(svg, sv('rect', {'class': 'shade', x: wx + ww, y: top, width: Math.max(0, L + pw - wx - ww), height: ph}));
    var win = sv('rect', {'class': 'window', x: wx, y: top, width: ww, height: ph});
    var brush = sv('rect', {'class': 'brush', x: 0, y: top, width: 0, height: ph, visibility: 'hidden'});
    var area = sv('rect', {x: L, y: top, width: pw, height: ph, fill: 'transparent'});
    add(svg, area, brush, win);
    function plotX(ev, r) {
      r = r || svg.getBoundingClientRect();
      return Math.max(L, Math.min(L + pw, (ev.clientX - r.left) * W / r.width));
    }
    function timeAt(x) { return (x - L) / pw * duration; }
    win.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      ev.preventDefault();
      var x = plotX(ev);
      /* panning here: dragging right moves the view right */
      drag = {x0: x, x: x, pan: true, v0: view.t0, v1: view.t1, pxToT: -duration / pw, plotX: plotX,
              box: svg.getBoundingClientRect(), timeAt: timeAt};
    });
    area.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      ev.preventDefault();
      var x = plotX(ev);
      brush.setAttribute('x', x);
      brush.setAttribute('width', 0);
      brush.setAttribute('visibility', 'visible');
      /* a click without a drag centres the view there */
      drag = {brush: brush, x0: x, x: x, pan: false, plotX: plotX, box: svg.getBoundingClientRect(), timeAt: timeAt, click: function (t) {
        var s = view.t1 - view.t0;
        setView(t - s / 2, t + s / 2);
      }};
    });
    add(box, svg);
  }

  function legend() {
    var lg = clear(document.getElementById('legend'));
    allPhases.forEach(function (p) {
      var b = el('button', {type: 'button', 'data-phase': p, 'aria-pressed': hidden[p] ? 'false' : 'true',
                            title: 'show or hide ' + p + ' (double-click: only this one)'});
      add(b, swatch(p), p);
      b.addEventListener('click', function () {
        hidden[p] = !hidden[p];
        if (allPhases.every(function (x) { return hidden[x]; })) hidden[p] = false;
        legend();
        scheduleDraw();
      });
      b.addEventListener('dblclick', function () {
        allPhases.forEach(function (x) { hidden[x] = x !== p; });
        legend();
        scheduleDraw();
      });
      add(lg, b);
    });
    function key(cls, style, text) {
      add(lg, add(el('span', {'class': 'key'}), el('span', {'class': 'sw line ' + cls, style: style}), text));
    }
    if (ooms.length) key('solid', 'border-color:var(--oom)', 'out of memory');
    if (readyS !== null) key('', 'border-color:var(--ready)', 'server ready');
    if (marks.length) key('dotted', 'border-color:var(--mark)', 'mark');
    if (models.some(function (m) { return num(m.dev.total_bytes); })) key('', 'border-color:var(--capacity)', 'capacity');
    if (models.some(function (m) { return otherBytes(m.dev) > 0; })) key('dotted', 'border-color:var(--available)', 'left for this run');
    if (hasRequests) add(lg, add(el('span', {'class': 'key'}), el('span', {'class': 'sw', style: 'background:var(--inflight);opacity:.45'}), 'requests in flight'));
    add(lg, add(el('span', {'class': 'key', title: 'a phase held more than drawn at some moment of that span (its most there)'}), el('span', {'class': 'sw', style: 'background:#8a96a3;opacity:.5'}), 'translucent: more, briefly'));
  }

  var drawn = 0, pending = false;
  function drawTimelines() {
    pending = false;
    var sec = document.getElementById('timelines');
    var box = section('timelines');
    clear(box);
    var width = Math.max(320, Math.floor(box.clientWidth || 1000));
    sec.setAttribute('data-view-start', view.t0);
    sec.setAttribute('data-view-end', view.t1);
    var vr = document.getElementById('view-range');
    vr.textContent = 'showing ' + secs(view.t0) + ' \u2013 ' + secs(view.t1) + ' of ' + secs(duration) +
                     (bucketS && view.t1 - view.t0 < bucketS * 40 ? '; data resolution ' + secs(bucketS) : '');
    drawOverview(document.getElementById('overview'), width);
    drawn = 0;
    if (!devices.length) {
      add(box, el('p', {'class': 'note'}, 'The run used no GPU.'));
      return;
    }
    /* every device of the run in its order: an idle card is evidence
       too (a model that was meant to be spread over it) */
    devices.forEach(function (d) {
      var m = models.filter(function (x) { return x.dev === d; })[0];
      var div = el('div', {'class': 'device' + (m ? '' : ' idle'), 'data-device': d.id});
      if (!m) {
        add(div, el('h3', null, deviceTitle(d) + ' \u2014 ' + idleText(d)));
        add(div, add(el('div', {'class': 'bar idle-bar', title: idleText(d)}), el('div', {'class': 'seg free', style: 'width:100%'})));
        add(box, div);
        return;
      }
      var live = isObj(d) && num(d.live_bytes_end) ? ', ' + bytes(d.live_bytes_end) + ' live at the end' : '';
      add(div, el('h3', null, deviceTitle(d) + ' \u2014 peak ' + bytes(peakOf(d)) + (isObj(d.peak) && num(d.peak.time_s) ? ' at ' + secs(d.peak.time_s) : '') + live));
      add(box, div);
      drawn += drawDevice(div, m, width);
    });
  }
  /* What a device the run never allocated on says. */
  function idleText(d) {
    var cap = num(d.total_bytes) ? bytes(d.total_bytes) + ' ' : '';
    return 'idle: ' + cap + 'visible to the run, nothing allocated on it';
  }
  function scheduleDraw() {
    if (pending) return;
    pending = true;
    (window.requestAnimationFrame || setTimeout)(drawTimelines);
  }

  /* ---- header ---- */
  (function () {
    var root = processes.filter(function (p) {
      return !processes.some(function (q) { return q.pid === p.ppid; });
    })[0] || processes[0];
    var cmdBox = document.getElementById('command');
    if (root) {
      var c = cmdline(root);
      cmdBox.textContent = c;
      document.title = 'vramtrace: ' + c.slice(0, 80);
      if (c.length > 300) {
        var more = el('button', {type: 'button', 'class': 'more'}, 'show the whole command line');
        more.addEventListener('click', function () {
          cmdBox.classList.toggle('open');
          more.textContent = cmdBox.classList.contains('open') ? 'show less' : 'show the whole command line';
        });
        cmdBox.parentNode.insertBefore(more, cmdBox.nextSibling);
      }
    }
    var s = document.getElementById('summary');
    function chip(text, cls) { add(s, el('span', {'class': 'chip' + (cls ? ' ' + cls : '')}, text)); }
    if (startMs !== null) chip('started ' + clock(startMs, 0, true) + ' UTC');
    if (num(R.recording_start_s)) chip('recording started at ' + secs(R.recording_start_s) + ' (what was live then comes from a snapshot)');
    chip(plural(processes.length, 'process', 'processes') + ', ' + (num(run.events) ? run.events : 0) + ' events over ' + secs(run.duration_s));
    chip(plural(devices.length, 'device'));
    if (listen && num(listen.time_s)) chip('listening at ' + secs(listen.time_s) + ' (pid ' + listen.pid + ', port ' + listen.port + ')');
    if (readyS !== null) chip('server ready at ' + secs(readyS));
    else if (listen) chip('server ready: not seen (no request answered 2xx)');
    else if (!notServer) chip('no server listened');
    if (hasRequests) chip('at most ' + plural(requests.max_inflight || 0, 'request') + ' in flight');
    if (num(requests.single_request_peak_bytes))
      chip('one request alone: ' + bytes(requests.single_request_peak_bytes) + ' grown on device ' + requests.single_request_peak_device);
    chip(plural(ooms.length, 'allocation') + ' out of memory', ooms.length ? 'bad' : '');
    var other = failures.filter(function (f) { return !f.oom; }).length;
    if (other) chip(plural(other, 'other failed call'));
    if (run.truncated) chip('incomplete trace', 'bad');
    var vc = document.getElementById('verdict-chip');
    if (diagnosis && diagnosis.verdict) {
      add(vc, el('span', {'class': 'badge ' + diagnosis.verdict}, diagnosis.verdict));
      if (diagnosis.confidence) add(vc, el('span', {'class': 'badge conf ' + diagnosis.confidence}, diagnosis.confidence + ' confidence'));
    }
  })();

  /* ---- diagnosis ---- */
  function textOf(it) {
    if (typeof it === 'string') return it;
    if (isObj(it)) return it.text || it.message || it.summary || JSON.stringify(it);
    return String(it);
  }
  (function () {
    var box = section('diagnosis');
    var d = diagnosis;
    if (!d) {
      var div0 = el('div', {'class': 'diag' + (ooms.length ? '' : ' none')});
      if (ooms.length) {
        var o = ooms[0];
        add(div0, el('p', null, plural(ooms.length, 'allocation') + ' ran out of memory; the first: ' + bytes(o.requested_bytes) + ' by ' + o.api +
          ' on ' + (o.device >= 0 ? 'device ' + o.device : 'the host') + ' at ' + secs(o.time_s) + ', ' + o.stage + ' stage, phase ' + o.phase + '.'));
      } else {
        add(div0, el('p', null, 'No allocation ran out of memory.'));
      }
      add(div0, el('p', {'class': 'note'}, 'This report has no diagnosis.'));
      add(box, div0);
      return;
    }
    var fc = isObj(d.failing_call) ? d.failing_call : null;
    if (notServer && fc) {
      var lead = el('div', {'class': 'lead', id: 'failing-call'});
      var held = arr(d.evidence).filter(function (e) { return isObj(e) && e.key === 'held_bytes'; })[0];
      add(lead, el('p', {'class': 'headline'}, 'Out of memory in a program that is not a server: ' + (held ? held.text : (fc.site || 'a call') + ' failed')));
      var fr = summaryFrames(arr(fc.frames)).map(function (f) { return frameText(f); });
      if (fr.length) {
        add(lead, el('h4', null, 'Its stack, innermost first'));
        add(lead, el('pre', {'class': 'stack'}, fr.join('\n')));
      }
      add(box, lead);
    }
    var div = el('div', {'class': 'diag ' + (d.verdict || ''), 'data-verdict': d.verdict});
    var h = el('p');
    add(h, el('span', {'class': 'badge ' + d.verdict}, d.verdict));
    if (d.confidence) add(h, el('span', {'class': 'badge conf ' + d.confidence}, d.confidence + ' confidence'));
    var what = [];
    if (d.detail) what.push(String(d.detail).replace(/_/g, ' '));
    if (d.stage) what.push(d.stage + ' stage');
    if (num(d.device)) what.push('device ' + d.device);
    if (d.engine) what.push('engine ' + d.engine);
    add(h, ' ' + what.join(' \u00b7 '));
    add(div, h);
    /* a log alone: its numbers, not a trace's */
    if (d.source === 'log')
      add(div, el('p', {'class': 'note'}, 'From the server\u2019s log alone: nothing was traced, every number is the log\u2019s.' +
                  (d.record_command ? ' A trace of the same server settles what it leaves open: ' + d.record_command : '')));
    if (d.confidence_reason) add(div, el('p', {'class': 'reason'}, d.confidence_reason));
    function list(title, items, cls) {
      /* an action that costs nothing has an empty cost: no bullet */
      items = arr(items).filter(function (it) { return it !== '' && it !== null; });
      if (!items.length) return;
      add(div, el('h4', null, title));
      var ul = el('ul', {'class': cls});
      items.forEach(function (it) { add(ul, el('li', null, textOf(it))); });
      add(div, ul);
    }
    list('Evidence', d.evidence, 'evidence');
    var ladder = arr(d.ladder).filter(isObj);
    if (ladder.length) {
      add(div, el('h4', null, 'The ladder: each budget added to what came before, on the failing device'));
      var tb = el('table', {'class': 'data ladder'});
      add(tb, add(el('tr'), el('th', null, 'rung'), el('th', {'class': 'num'}, 'bytes'), el('th', {'class': 'num'}, 'running sum'), el('th', null, 'fits')));
      /* the rung the verdict names (diagnosis.rung), else the first that
         does not fit */
      var brokeAt = ladder.filter(function (r) { return d.rung ? r.rung === d.rung : r.fits === false; })[0];
      ladder.forEach(function (r) {
        var broke = r === brokeAt;
        add(tb, add(el('tr', {'class': broke ? 'broke' : ''}), el('td', null, r.rung),
                    el('td', {'class': 'num'}, d.source === 'log' && r.source === null ? 'not in the log' : bytes(r.bytes)),
                    el('td', {'class': 'num'}, bytes(r.cumulative_bytes)),
                    el('td', {'class': r.fits === false ? 'breaks' : r.fits === true ? 'fits' : ''},
                       (r.fits === false ? 'no' : r.fits === true ? 'yes' : '-') + (broke ? ': the budget that broke' : ''))));
      });
      add(div, add(el('div', {'class': 'scroll'}), tb));
    }
    list('What to change', d.actions, 'actions');
    list('What it costs', d.costs, 'costs');
    list('How to verify', d.verify, 'verify');
    add(box, div);
  })();

  /* ---- timelines ---- */
  legend();
  view.t0 = fit.t0;
  view.t1 = fit.t1;
  (function () {
    var tb = document.getElementById('toolbar');
    tb.addEventListener('click', function (ev) {
      var b = ev.target.closest ? ev.target.closest('button') : ev.target;
      if (!b) return;
      var act = b.getAttribute('data-act'), md = b.getAttribute('data-mode');
      if (act === 'in') zoom(0.5);
      else if (act === 'out') zoom(2);
      else if (act === 'left') pan(-0.25);
      else if (act === 'right') pan(0.25);
      else if (act === 'fit') setView(fit.t0, fit.t1);
      else if (act === 'all') setView(0, duration);
      else if (md) {
        mode = md;
        Array.prototype.forEach.call(tb.querySelectorAll('button[data-mode]'), function (x) {
          x.setAttribute('aria-pressed', x.getAttribute('data-mode') === mode ? 'true' : 'false');
        });
        scheduleDraw();
      }
    });
    var sec = document.getElementById('timelines');
    sec.setAttribute('tabindex', '0');
    sec.addEventListener('keydown', function (ev) {
      if (ev.target.tagName === 'BUTTON' && (ev.key === 'Enter' || ev.key === ' ')) return;
      var k = ev.key, done = true;
      if (k === '+' || k === '=') zoom(0.5);
      else if (k === '-' || k === '_') zoom(2);
      else if (k === 'ArrowLeft') pan(-0.25);
      else if (k === 'ArrowRight') pan(0.25);
      else if (k === '0') setView(fit.t0, fit.t1);
      else if (k === 'Home') setView(0, duration);
      else done = false;
      if (done) ev.preventDefault();
    });
  })();
  drawTimelines();
  var resizeTimer = null;
  window.addEventListener('resize', function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(drawTimelines, 150);
  });

  /* ---- windows: the steps of a load test ---- */
  (function () {
    var box = section('windows');
    if (!windows.length) {
      add(box, el('p', {'class': 'note'}, 'No marks: a window runs from each mark (vramtrace ctl DIR mark LABEL, or vramtrace_mark()) to the next.'));
      return;
    }
    add(box, el('p', {'class': 'muted'}, 'From each mark to the next (the last to the end of the run): the most requests in flight, the allocations refused, and each device\'s peak with the phases that held most. Click a row to show its span on the timelines.'));
    var tb = el('table', {'class': 'data windows'});
    var hdr = add(el('tr'), el('th', null, 'window'), el('th', null, 'from'), el('th', null, 'to'), el('th', {'class': 'num'}, 'length'),
                  el('th', {'class': 'num'}, 'in flight'), el('th', {'class': 'num'}, 'OOMs'));
    devices.forEach(function (d) { add(hdr, el('th', {'class': 'num'}, 'device ' + d.id + ' peak')); });
    add(tb, hdr);
    windows.forEach(function (w) {
      var tr = el('tr', {'class': 'window' + (w.ooms ? ' oom' : ''), 'data-start': w.start_s, 'data-end': w.end_s, tabindex: '0'});
      add(tr, el('td', null, w.label), timeCell(w.start_s, w.start_utc), timeCell(w.end_s, w.end_utc),
          el('td', {'class': 'num'}, num(w.end_s) && num(w.start_s) ? secs(w.end_s - w.start_s) : '-'),
          el('td', {'class': 'num'}, num(w.max_inflight) ? w.max_inflight : '-'), el('td', {'class': 'num'}, num(w.ooms) ? w.ooms : '-'));
      devices.forEach(function (d) {
        var x = arr(w.devices).filter(function (y) { return isObj(y) && y.id === d.id; })[0];
        var td = el('td', {'class': 'num'}, x ? bytes(x.peak_bytes) : '-');
        if (x && isObj(x.by_phase)) {
          var top = Object.keys(x.by_phase).filter(function (p) { return x.by_phase[p] > 0; })
            .sort(function (a, b) { return x.by_phase[b] - x.by_phase[a]; }).slice(0, 3);
          if (top.length) add(td, el('span', {'class': 'sub'}, top.map(function (p) { return p + ' ' + bytes(x.by_phase[p]); }).join(', ')));
        }
        add(tr, td);
      });
      function show() {
        if (!num(w.start_s) || !num(w.end_s)) return;
        var pad = (w.end_s - w.start_s) * 0.03;
        setView(w.start_s - pad, w.end_s + pad);
        document.getElementById('timelines').scrollIntoView({block: 'start'});
      }
      tr.addEventListener('click', show);
      tr.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') show(); });
      add(tb, tr);
    });
    add(box, add(el('div', {'class': 'scroll'}), tb));
  })();

  /* ---- budget bars ---- */
  (function () {
    var box = section('budgets');
    var shown = devices.filter(function (d) { return peakOf(d) > 0; });
    if (!shown.length) add(box, el('p', {'class': 'note'}, 'No device memory was allocated.'));
    else shown = devices;
    shown.forEach(function (d) {
      if (!(peakOf(d) > 0)) {
        var idle = el('div', {'class': 'budget idle', 'data-device': d.id});
        add(idle, add(el('div', {'class': 'label'}), el('strong', null, deviceTitle(d)), el('span', {'class': 'muted'}, idleText(d))));
        add(idle, add(el('div', {'class': 'bar'}), el('div', {'class': 'seg free', style: 'width:100%', title: idleText(d)})));
        add(box, idle);
        return;
      }
      var base = otherBytes(d), peak = peakOf(d), cap = num(d.total_bytes) ? d.total_bytes : null;
      var scale = cap || (peak + base) || 1;
      var at = isObj(d.peak) && isObj(d.peak.by_phase) ? d.peak.by_phase : {};
      var div = el('div', {'class': 'budget', 'data-device': d.id});
      var lab = el('div', {'class': 'label'});
      add(lab, el('strong', null, deviceTitle(d)));
      add(lab, el('span', {'class': 'muted'}, cap
        ? 'peak ' + bytes(peak) + ' of ' + bytes(cap) + ' (' + pct(peak, cap) + ')' + (base ? ' + ' + bytes(base) + ' held by other processes' : '') + '; ' + bytes(Math.max(0, cap - base - peak)) + ' free'
        : 'peak ' + bytes(peak) + ' (capacity unknown)'));
      add(div, lab);
      var bar = el('div', {'class': 'bar'});
      if (base) add(bar, el('div', {'class': 'seg baseline', 'data-phase': '(other processes)', style: 'width:' + (100 * base / scale) + '%', title: 'held by other processes: ' + bytes(base)}));
      var phases = isObj(d.phases) ? d.phases : {};
      var names = Object.keys(phases).concat(Object.keys(at).filter(function (p) { return !(p in phases); })).sort(byRank);
      names.forEach(function (p) {
        if (!(at[p] > 0)) return;
        add(bar, el('div', {'class': 'seg', 'data-phase': p, style: 'width:' + (100 * at[p] / scale) + '%;background:' + color(p), title: p + ': ' + bytes(at[p]) + ' at the peak'}));
      });
      add(div, bar);
      var tb = el('table', {'class': 'data phases'});
      add(tb, add(el('tr'), el('th', null, 'phase'), el('th', {'class': 'num'}, 'at device peak'), el('th', {'class': 'num'}, 'own peak'),
                  el('th', {'class': 'num'}, 'live at end'), el('th', {'class': 'num'}, 'allocs'), el('th', {'class': 'num'}, 'frees'), el('th', {'class': 'num'}, 'failed')));
      names.forEach(function (p) {
        var c = isObj(phases[p]) ? phases[p] : {};
        if (!c.allocs && !c.frees && !c.failed && !c.peak_bytes && !(at[p] > 0)) return;
        add(tb, add(el('tr', {'data-phase': p}), add(el('td', {'class': 'phase'}), swatch(p), ' ' + p),
          el('td', {'class': 'num'}, bytes(at[p] || 0)), el('td', {'class': 'num'}, bytes(c.peak_bytes)),
          el('td', {'class': 'num'}, bytes(c.live_bytes_end)), el('td', {'class': 'num'}, num(c.allocs) ? c.allocs : '-'),
          el('td', {'class': 'num'}, num(c.frees) ? c.frees : '-'), el('td', {'class': 'num'}, num(c.failed) ? c.failed : '-')));
      });
      add(div, add(el('div', {'class': 'scroll'}), tb));
      add(box, div);
    });
  })();

  /* ---- out-of-memory failures, then every other failed call ---- */
  (function () {
    var box = section('ooms');
    if (!ooms.length) {
      add(box, el('p', {'class': 'note'}, 'No allocation ran out of memory.'));
    } else {
      var hasFatal = ooms.some(function (o) { return 'fatal' in o; });
      var tb = el('table', {'class': 'data ooms'});
      var hdr = add(el('tr'), el('th', null, 'time'), el('th', null, 'pid'), el('th', null, 'device'), el('th', null, 'call'),
                    el('th', {'class': 'num'}, 'size'), el('th', null, 'driver free'), el('th', null, 'stage'), el('th', null, 'phase'),
                    el('th', {'class': 'num'}, 'in flight'), el('th', null, 'live on the device'));
      if (hasFatal) add(hdr, el('th', null, 'outcome'));
      add(tb, hdr);
      ooms.forEach(function (o) {
        var live = isObj(o.live_by_phase) ? o.live_by_phase : {};
        var lv = Object.keys(live).filter(function (p) { return live[p] > 0; }).sort(function (a, b) { return live[b] - live[a]; })
          .map(function (p) { return p + ' ' + bytes(live[p]); }).join(', ');
        var tr = add(el('tr', {'class': o.fatal === false ? '' : 'fatal'}), timeCell(o.time_s, o.time_utc), el('td', null, o.pid),
          el('td', null, o.device >= 0 ? o.device : 'host'), el('td', null, o.api), el('td', {'class': 'num'}, bytes(o.requested_bytes)),
          el('td', null, num(o.free_bytes) ? bytes(o.free_bytes) + (num(o.total_bytes) ? ' of ' + bytes(o.total_bytes) : '') : '-'),
          el('td', null, o.stage), el('td', null, o.phase), el('td', {'class': 'num'}, num(o.inflight) ? o.inflight : '-'), el('td', null, lv || '-'));
        if (hasFatal) {
          var out = o.fatal === true ? 'fatal' : o.fatal === false ? 'recovered' : '-', rb = o.recovered_by;
          if (isObj(rb)) {
            /* the allocation that succeeded for the same need */
            out += ' ' + [num(rb.time_s) ? 'at ' + secs(rb.time_s) : '', rb.api ? 'by ' + rb.api : '',
                          num(rb.bytes) ? 'of ' + bytes(rb.bytes) : '',
                          num(rb.freed_bytes) ? 'after ' + bytes(rb.freed_bytes) + ' freed' : ''].filter(Boolean).join(' ');
          } else if (rb) {
            out += ' (' + textOf(rb) + ')';
          }
          add(tr, el('td', null, out));
        }
        add(tb, tr);
      });
      add(box, add(el('div', {'class': 'scroll'}), tb));
    }
    box = section('failures');
    var other = failures.filter(function (f) { return !f.oom; });
    if (!other.length) {
      add(box, el('p', {'class': 'note'}, 'No other call failed.'));
      return;
    }
    var t2 = el('table', {'class': 'data'});
    add(t2, add(el('tr'), el('th', null, 'time'), el('th', null, 'pid'), el('th', null, 'device'), el('th', null, 'call'),
                el('th', {'class': 'num'}, 'size'), el('th', null, 'error'), el('th', null, 'phase')));
    other.forEach(function (f) {
      add(t2, add(el('tr'), timeCell(f.time_s, f.time_utc), el('td', null, f.pid),
        el('td', null, f.device >= 0 ? f.device : (f.family === 'pinned' || f.family === 'registered' ? 'host' : '?')),
        el('td', null, f.api), el('td', {'class': 'num'}, f.requested_bytes ? bytes(f.requested_bytes) : '-'),
        el('td', null, f.error_name || f.error), el('td', null, f.phase)));
    });
    add(box, add(el('div', {'class': 'scroll'}), t2));
  })();

  /* ---- the engine's log and findings: shown as they come ---- */
  /* A value of a key: bytes, seconds (with the wall clock) or as is. */
  function valueText(k, v, obj) {
    if (v === null || v === undefined) return '-';
    if (num(v) && /_bytes$/.test(k)) return bytes(v) + ' (' + v + ')';
    if (num(v) && /(_s|^time_s)$/.test(k)) {
      var w = wall(v, obj && obj[k.replace(/_s$/, '_utc')]);
      return secs(v) + (w ? ', ' + w : '');
    }
    if (Array.isArray(v) && v.every(function (x) { return !isObj(x) && !Array.isArray(x); })) return v.join(', ');
    return String(v);
  }
  function generic(v, depth) {
    if (Array.isArray(v)) {
      var objs = v.filter(isObj);
      if (objs.length && objs.length === v.length) {
        var keys = [];
        objs.forEach(function (o) { Object.keys(o).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
        var tb = el('table', {'class': 'data'});
        add(tb, add.apply(null, [el('tr')].concat(keys.map(function (k) { return el('th', null, k.replace(/_/g, ' ')); }))));
        objs.forEach(function (o) {
          add(tb, add.apply(null, [el('tr')].concat(keys.map(function (k) {
            var x = o[k];
            return (isObj(x) || Array.isArray(x)) && depth < 3 && !(Array.isArray(x) && !x.some(isObj)) ? add(el('td'), generic(x, depth + 1)) : el('td', null, valueText(k, x, o));
          }))));
        });
        return add(el('div', {'class': 'scroll'}), tb);
      }
      var ul = el('ul');
      v.forEach(function (x) { add(ul, isObj(x) && depth < 3 ? add(el('li'), generic(x, depth + 1)) : el('li', null, textOf(x))); });
      return ul;
    }
    if (isObj(v)) {
      var t = el('table', {'class': 'data kv'});
      Object.keys(v).forEach(function (k) {
        var x = v[k];
        var td = (isObj(x) || (Array.isArray(x) && x.some(isObj))) && depth < 3 ? add(el('td'), generic(x, depth + 1)) : el('td', null, valueText(k, x, v));
        add(t, add(el('tr'), el('th', null, k.replace(/_/g, ' ')), td));
      });
      return t;
    }
    return el('p', null, valueText('', v));
  }
  /* The engine's log read for people: what it printed beside what the
     trace measured, its settings, its ready line, its errors; the log's
     own words wrap inside their cell. Keys this page does not know yet
     follow as a plain table. */
  var LOG_KNOWN = ['path', 'engine', 'lines', 'cut_bytes', 'facts_dropped', 'facts', 'config', 'flags_from_log', 'ready',
                   'errors', 'fatal_error', 'fatal_failure', 'fatal_failure_match', 'comparison', 'refusal'];
  function logValue(f) {
    if (!num(f.value)) return '-';
    if (f.unit === 'bytes') return bytes(f.value);
    if (f.unit === 'x1000') return (f.value / 1000).toFixed(2) + 'x';
    if (f.unit === 'permille') return (f.value / 10).toFixed(1) + '%';
    return f.value.toLocaleString('en-US') + (f.unit && f.unit !== 'count' ? ' ' + f.unit : '');
  }
  function logDevice(x) { return num(x) && x >= 0 ? 'device ' + x : 'all'; }
  function logLine(x) { return num(x) ? 'line ' + x : ''; }
  function logText(t) { return el('td', {'class': 'logtext'}, t === null || t === undefined ? '' : String(t)); }
  function engineLog(log) {
    var box = section('engine-log');
    var head = [log.path ? String(log.path) : 'the log', log.engine ? 'engine ' + log.engine : 'engine not recognised',
                num(log.lines) ? plural(log.lines, 'line') : ''].filter(Boolean).join(' \u00b7 ');
    add(box, el('p', {'class': 'muted'}, head + (log.cut_bytes ? ' (' + bytes(log.cut_bytes) + ' left out of the middle)' : '')));
    var cmp = arr(log.comparison).filter(isObj);
    if (cmp.length) {
      add(box, el('h3', null, 'What the engine printed, beside what the trace measured'));
      var tb = el('table', {'class': 'data log-compare'});
      add(tb, add(el('tr'), el('th', null, 'quantity'), el('th', null, 'device'), el('th', {'class': 'num'}, 'the engine'),
                  el('th', {'class': 'num'}, 'traced'), el('th', {'class': 'num'}, 'difference'), el('th', null, 'log')));
      cmp.forEach(function (c) {
        add(tb, add(el('tr', {'class': c.flagged ? 'fatal' : ''}), el('td', null, String(c.quantity || '').replace(/_/g, ' ')),
          el('td', null, logDevice(c.device)), el('td', {'class': 'num'}, bytes(c.engine_bytes)), el('td', {'class': 'num'}, bytes(c.traced_bytes)),
          el('td', {'class': 'num'}, num(c.difference_percent) ? (c.difference_percent >= 0 ? '+' : '') + c.difference_percent.toFixed(1) + '%' + (c.flagged ? ' (disagrees)' : '') : '-'),
          el('td', null, logLine(c.line))));
      });
      add(box, add(el('div', {'class': 'scroll'}), tb));
    }
    var cfg = isObj(log.config) ? log.config : {};
    var set = Object.keys(cfg).filter(function (k) { return cfg[k] !== null && cfg[k] !== undefined; });
    if (set.length) {
      var fl = arr(log.flags_from_log);
      add(box, el('p', null, 'Its settings: ' + set.map(function (k) {
        return k.replace(/_/g, ' ') + ' ' + cfg[k] + (fl.indexOf(k) >= 0 ? ' (only the log says it)' : '');
      }).join(', ') + '.'));
    }
    if (isObj(log.ready)) {
      var w = wall(log.ready.time_s, log.ready.time_utc);
      add(box, el('p', null, 'Ready: ' + logLine(log.ready.line) + ' at ' + secs(log.ready.time_s) + (w ? ' (' + w + ')' : '') + ': ' + (log.ready.text || '')));
    } else if ('ready' in log) {
      add(box, el('p', null, 'Ready: the log never says the server was ready.'));
    }
    var errs = arr(log.errors).filter(isObj);
    if (errs.length) {
      add(box, el('h3', null, 'Errors it printed'));
      var te = el('table', {'class': 'data log-errors'});
      add(te, add(el('tr'), el('th', null, 'log'), el('th', null, 'time'), el('th', null, 'what'), el('th', null, 'the line')));
      errs.forEach(function (e, i) {
        var what = String(e.kind || 'error').replace(/_/g, ' ') + (i === log.fatal_error ? ', fatal' : e.fatal ? ', fatal' : '') + (e.refusal ? ', a refusal' : '');
        if (num(e.requested_bytes)) what += ': ' + bytes(e.requested_bytes) + (num(e.device) && e.device >= 0 ? ' on device ' + e.device : '');
        add(te, add(el('tr', {'class': i === log.fatal_error ? 'fatal' : ''}), el('td', null, logLine(e.line)), timeCell(e.time_s, e.time_utc),
                    el('td', null, what), logText(e.text)));
      });
      add(box, add(el('div', {'class': 'scroll'}), te));
    }
    if (log.fatal_failure_match) add(box, el('p', null, String(log.fatal_failure_match)));
    if (isObj(log.refusal)) {
      add(box, el('h3', null, 'A budget the engine refused'));
      add(box, generic(log.refusal, 1));
    }
    var facts = arr(log.facts).filter(isObj);
    if (facts.length) {
      add(box, el('h3', null, 'Its memory lines'));
      var tf = el('table', {'class': 'data log-facts'});
      add(tf, add(el('tr'), el('th', null, 'log'), el('th', null, 'time'), el('th', null, 'what'), el('th', null, 'device'),
                  el('th', {'class': 'num'}, 'value'), el('th', null, 'the line')));
      facts.forEach(function (f) {
        add(tf, add(el('tr'), el('td', null, logLine(f.line)), timeCell(f.time_s, f.time_utc),
                    el('td', null, String(f.kind || '').replace(/_/g, ' ')), el('td', null, logDevice(f.device)),
                    el('td', {'class': 'num'}, logValue(f)), logText(f.text)));
      });
      add(box, add(el('div', {'class': 'scroll'}), tf));
      if (log.facts_dropped) add(box, el('p', {'class': 'note'}, plural(log.facts_dropped, 'more line') + ' left out'));
    }
    var rest = {};
    Object.keys(log).forEach(function (k) {
      /* a key of another shape than this page reads is shown as it is */
      if (LOG_KNOWN.indexOf(k) < 0 || (k === 'lines' && !num(log.lines))) rest[k] = log[k];
    });
    if (Object.keys(rest).length) add(box, generic(rest, 1));
  }
  (function () {
    var log = notServer ? null : R.engine_log;
    if (isObj(log)) {
      document.getElementById('engine-log').hidden = false;
      engineLog(log);
    } else if (log !== undefined && log !== null) {
      document.getElementById('engine-log').hidden = false;
      add(section('engine-log'), generic(log, 0));
    }
    var f = arr(R.findings);
    if (f.length) {
      document.getElementById('findings').hidden = false;
      var ul = el('ul', {'class': 'findings'});
      f.forEach(function (x) {
        var li = el('li');
        if (isObj(x) && (x.severity || x.kind)) add(li, el('strong', null, (x.severity || x.kind) + ': '));
        add(li, textOf(x));
        add(ul, li);
      });
      add(section('findings'), ul);
    }
  })();

  /* ---- top sites ---- */
  function frameText(f) {
    if (!isObj(f)) return String(f);
    var s = f.function || (num(f.ip) ? '0x' + f.ip.toString(16) : '??');
    if (f.kind === 'native' && f.function && f.offset) s += '+0x' + f.offset.toString(16);
    var file = f.file ? String(f.file).split('/').pop() : '';
    if (file) s += '  ' + file + (num(f.line) ? ':' + f.line : '');
    return s;
  }
  /* Code every allocation of a kind runs through (the CUDA runtime,
     PyTorch's allocator, the interpreter, the ctypes gate, libffi, libc;
     the analyzer's callpath.c) and unnamed frames: they tell no two
     paths apart, so a path's summary leaves them out, as the text
     report does. */
  function plumbing(f) {
    if (!isObj(f) || f.kind === 'python') return false;
    return !f.function ||
      /^(libcuda\.so|libcudart|libamdhip64|libhip|libc10|libtorch|libpython|python|libc\.so|libc-|ld-linux|libffi|libstdc\+\+|libvramtrace|_ctypes)/
        .test(f.file ? String(f.file).split('/').pop() : '');
  }
  /* The frames a path's summary shows: Python ones first (they name the
     step), then named native ones that are not plumbing; plumbing only
     when nothing else has a name. */
  function summaryFrames(frames) {
    var py = frames.filter(function (f) { return isObj(f) && f.kind === 'python'; });
    var nat = frames.filter(function (f) { return isObj(f) && f.kind !== 'python' && !plumbing(f); });
    var pick = py.concat(nat);
    return pick.length ? pick : frames.slice();
  }
  (function () {
    var box = section('sites');
    var sites = arr(R.top_sites).filter(isObj);
    if (!sites.length) {
      add(box, el('p', {'class': 'note'}, 'Nothing was live at a peak.'));
      return;
    }
    add(box, el('p', {'class': 'muted'}, 'The call paths that held the most of each phase at the device\'s peak, innermost frame first.'));
    devices.forEach(function (d) {
      var list = sites.filter(function (s) { return s.device === d.id; });
      if (!list.length) return;
      add(box, el('h3', null, deviceTitle(d) + ' \u2014 peak ' + bytes(peakOf(d)) + (isObj(d.peak) ? ' at ' + secs(d.peak.time_s) : '')));
      var tb = el('table', {'class': 'data sites', 'data-device': d.id});
      add(tb, add(el('tr'), el('th', null, 'phase'), el('th', {'class': 'num'}, 'bytes'), el('th', {'class': 'num'}, 'allocations'), el('th', null, 'call path')));
      list.forEach(function (s) {
        var raw = arr(s.frames), frames = raw.map(frameText), cell = el('td');
        if (!frames.length) {
          add(cell, el('span', {'class': 'note'}, 'no stack recorded'));
        } else {
          var det = el('details'), depth = num(s.depth) ? s.depth : frames.length;
          var sum = summaryFrames(raw), n = Math.min(3, sum.length);
          add(det, el('summary', {'class': 'cmd'}, sum.slice(0, n).map(function (f) {
            var x = frameText(f).split('  ');
            return f.kind === 'python' && x[1] ? x[0] + ' (' + x[1] + ')' : x[0];
          }).join(' \u2190 ') + (depth > n ? '  (+' + (depth - n) + ' more)' : '')));
          add(det, el('pre', {'class': 'stack'}, frames.join('\n') + (depth > frames.length ? '\n... ' + (depth - frames.length) + ' more' : '')));
          add(cell, det);
        }
        add(tb, add(el('tr', {'class': 'site', 'data-phase': s.phase}), add(el('td', {'class': 'phase'}), swatch(s.phase), ' ' + s.phase),
          el('td', {'class': 'num'}, bytes(s.bytes)), el('td', {'class': 'num'}, s.allocs), cell));
      });
      add(box, add(el('div', {'class': 'scroll'}), tb));
    });
  })();

  /* ---- processes ---- */
  (function () {
    var box = section('processes');
    var tb = el('table', {'class': 'data'});
    add(tb, add(el('tr'), el('th', null, 'pid'), el('th', null, 'parent'), el('th', null, 'host'), el('th', null, 'exit'),
                el('th', null, 'started'), el('th', {'class': 'num'}, 'events'), el('th', null, 'command line')));
    processes.forEach(function (p) {
      var exit = num(p.exit_signal) ? 'signal ' + p.exit_signal : num(p.exit_status) ? 'exit ' + p.exit_status : 'unknown';
      if (p.complete === false) exit += ' (incomplete' + (p.truncated_reason ? ': ' + p.truncated_reason : '') + ')';
      add(tb, add(el('tr'), el('td', null, p.pid), el('td', null, p.ppid), el('td', null, p.host), el('td', null, exit),
        timeCell(p.start_s, p.start_utc),
        el('td', {'class': 'num'}, (num(p.events) ? p.events : '-') + (p.events_dropped ? ' (' + p.events_dropped + ' dropped)' : '')),
        el('td', {'class': 'cmd'}, cmdline(p))));
    });
    add(box, add(el('div', {'class': 'scroll'}), tb));
  })();

  body.setAttribute('data-rendered', 'ok');
  console.log('vramtrace report: ' + models.length + ' timeline(s), ' + drawn + ' series');
})();
