/*
 * replay_requests.c — requests in flight, the stage and readiness (a part
 * of the replay: replay.c's opening block says how the whole works).
 *
 * Owns the three key spaces of the live table that hold requests:
 * accepted connections by fd, annotated requests by id, HTTP requests by
 * fd (and HTTP/2 stream): the NET events that open and close them
 * (HTTP/1.x, HTTP/2 streams, protocols not followed, probes that are not
 * requests, requests inferred from an answer going quiet, hops between
 * processes of the run), the count in flight and its timeline, the
 * annotated REQUEST events, and, when the stream ends, what depends on
 * the order of facts a standby process brought: readiness, requests in
 * flight, the serving start.
 */
#include "replay_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void inflight_note(struct state *s, int64_t ts)
{
	struct series_acc *a = &s->inflight_acc;

	if (!a->active || s->r->inflight > a->max.total) {
		a->max.ts = ts;
		a->max.total = s->r->inflight;
		a->active = 1;
		a->after_max = 0;
	} else {
		a->after_max = 1;
	}
	a->last_ts = ts;
}

/* The number in flight changed (however requests are counted): the
 * first request begins serving; leaving idle sets each device's idle
 * level of the per-request phases; a request alone from its start is
 * measured (vrt_replay_single_note). */
static void requests_moved(struct state *s, int64_t ts)
{
	struct vrt_replay *r = s->r;
	uint32_t prev = s->prev_inflight, now = r->inflight;
	size_t i;

	s->prev_inflight = now;
	if (now > prev && !r->serving && !s->snap_edge) {
		r->serving = 1;
		r->serving_ts = ts;
	}
	if (!prev && now)
		for (i = 0; i < r->ndevices; i++) {
			struct devstate *ds = &s->devs[i];
			ds->idle_demand = vrt_replay_demand_level(ds);
			if (s->loading)
				ds->serve_demand = ds->idle_demand;
		}
	s->single_on = now == 1 && prev == 0 && !s->snap_edge;
	if (s->single_on)
		for (i = 0; i < r->ndevices; i++)
			vrt_replay_single_note(s, i, ts);
}

void vrt_replay_requests_changed(struct state *s, int64_t ts)
{
	struct vrt_replay *r = s->r;

	if (r->inflight > r->max_inflight) {
		r->max_inflight = r->inflight;
		r->max_inflight_ts = ts;
	}
	if (r->nwindows &&
	    r->inflight > r->windows[r->nwindows - 1].max_inflight)
		r->windows[r->nwindows - 1].max_inflight = r->inflight;
	requests_moved(s, ts);
	inflight_note(s, ts);
}

/* Opens (or closes) one annotated request (SP_REQ) or an older writer's
 * connection (SP_CONN, itself a request); duplicates and unknown closes
 * (lost events) change nothing. A snapshot's open request is no new one
 * (VRT_EV_SNAP: counted in flight, not begun). Requests on a newer
 * writer's connections are req_begin's and req_close's. */
int vrt_replay_requests_edge(struct state *s, const struct vrt_event *e,
                             uint8_t sp, int open)
{
	struct vrt_replay *r = s->r;
	uint32_t old;

	if (open) {
		/* The value is never read: any non-NONE object index
		 * (CONN_LEGACY for a connection). */
		if (vrt_replay_table_put(s, e->proc, sp, e->addr, CONN_LEGACY,
		                         &old))
			return -1;
		if (old != NONE)
			return 0;
		r->inflight++;
		if (e->flags & VRT_EV_SNAP) {
			/* open at the snapshot: not a new one */
		} else if (sp == SP_CONN) {
			r->connections++;
			if (e->proc < s->nprocs)
				s->conns[e->proc]++;
			/* an older writer's connection: its only request */
			s->legacy_conns = 1;
			if (e->ts > s->last_accept_ts)
				s->last_accept_ts = e->ts;
		} else {
			r->requests++;
		}
	} else {
		if (vrt_replay_table_take(s, e->proc, sp, e->addr) == NONE)
			return 0;
		r->inflight--;
	}
	s->snap_edge = (e->flags & VRT_EV_SNAP) != 0;
	vrt_replay_requests_changed(s, e->ts);
	s->snap_edge = 0;
	return 0;
}

/* The first REQUEST of process proc: from now on it counts its
 * annotated requests, not its connections or HTTP requests (never both);
 * those it holds open stop counting. */
void vrt_replay_requests_use(struct state *s, uint32_t proc, int64_t ts)
{
	struct vrt_replay *r = s->r;

	s->uses_requests[proc] = 1;
	r->connections -= r->connections >= s->conns[proc] ? s->conns[proc]
	                                                   : r->connections;
	vrt_replay_events_drop_open(s, proc, 0, ts);
}

static void listen_note(struct listen_seen *l, const struct vrt_event *e)
{
	if (l->have && l->ts <= e->ts)
		return;
	l->have = 1;
	l->ts = e->ts;
	l->proc = e->proc;
	l->port = e->size;
}

/* Facts of the first request begun, answered, answered 2xx (also from
 * the annotation API's brackets). */
void vrt_replay_requests_first(struct vrt_replay *r, int64_t ts)
{
	if (!r->have_first_request || ts < r->first_request_ts) {
		r->have_first_request = 1;
		r->first_request_ts = ts;
	}
}

static void first_response(struct vrt_replay *r, int64_t ts, uint64_t status)
{
	if (!r->have_first_response || ts < r->first_response_ts) {
		r->have_first_response = 1;
		r->first_response_ts = ts;
		r->first_response_status = (uint32_t)status;
	}
	if (status >= 200 && status < 300 &&
	    (!r->have_first_ok_response || ts < r->first_ok_response_ts)) {
		r->have_first_ok_response = 1;
		r->first_ok_response_ts = ts;
	}
}

static int on_listen(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	unsigned kind = vrt_net_kind(e);

	if (!r->have_first_listen || e->ts < r->first_listen_ts) {
		r->have_first_listen = 1;
		r->first_listen_ts = e->ts;
	}
	/* A library's own plumbing (NCCL, ZMQ, torch.distributed's store)
	 * is no server, and its connections are not followed. */
	if (vrt_net_flags(e) & VRT_NET_F_INTERNAL)
		return 0;
	if (kind == VRT_NET_KIND_INET)
		listen_note(&s->inet, e);
	else if (kind == VRT_NET_KIND_UNKNOWN)
		listen_note(&s->unknown, e);
	else if (kind == VRT_NET_KIND_UNIX && e->proc < s->nprocs)
		listen_note(&s->ps[e->proc].unix_listen, e);
	if (kind == VRT_NET_KIND_INET && e->proc < s->nprocs)
		s->ps[e->proc].inet_listened = 1;
	return 0;
}

/* Whether process p's requests are forwarded to it by a front (see
 * HOP_BEHIND); decided at its first request edge, when the front's listen
 * and first request are behind. */
static int behind_front(struct state *s, uint32_t p)
{
	const struct vrt_trace *t = s->t;
	uint32_t cur = p;
	int depth;

	if (p >= s->nprocs || p >= t->nprocs)
		return 0;
	if (s->ps[p].hop != HOP_UNDECIDED)
		return s->ps[p].hop == HOP_BEHIND;
	s->ps[p].hop = HOP_FRONT;
	if (!s->ps[p].inet_listened)
		return 0;
	for (depth = 0; depth < 64; depth++) {
		uint32_t q, parent = UINT32_MAX;
		for (q = 0; q < t->nprocs && q < s->nprocs; q++)
			if (q != cur && t->procs[q].pid == t->procs[cur].ppid) {
				parent = q;
				break;
			}
		if (parent == UINT32_MAX)
			break;
		if (s->ps[parent].inet_listened && s->ps[parent].served) {
			s->ps[p].hop = HOP_BEHIND;
			s->r->forwarded_proc_pid = t->procs[p].pid;
			return 1;
		}
		cur = parent;
	}
	return 0;
}

/* The request edges of vrt_replay_requests_net (what a back end's are
 * ignored for). */
static int is_request_edge(uint64_t op)
{
	return op == VRT_NET_ACCEPT || op == VRT_NET_CLOSE ||
	       op == VRT_NET_REQ_BEGIN || op == VRT_NET_REQ_END ||
	       op == VRT_NET_ANSWER;
}

/* The key of the request a NET event names on its connection. */
static inline uint64_t req_key(const struct vrt_event *e)
{
	return (e->addr & 0xffffffffu) | (uint64_t)vrt_net_stream(e) << 32;
}

/* A request path named by a REQ_BEGIN: counted per path (text or hash). */
static int path_note(struct state *s, const struct vrt_event *e, int probe)
{
	struct vrt_replay *r = s->r;
	uint32_t text = vrt_net_text(e), hash = vrt_net_val(e);
	size_t i;

	if (!text && !hash)
		return 0;
	for (i = 0; i < r->npaths; i++) {
		struct vrt_replay_path *p = &r->paths[i];
		if ((hash && p->hash == hash) || (!hash && p->text == text)) {
			p->requests++;
			if (!p->text)
				p->text = text;
			/* keep the most named first */
			while (i > 0 && r->paths[i - 1].requests <
			                        r->paths[i].requests) {
				struct vrt_replay_path x = r->paths[i - 1];
				r->paths[i - 1] = r->paths[i];
				r->paths[i] = x;
				i--;
			}
			return 0;
		}
	}
	if (r->npaths >= VRT_REPLAY_MAX_PATHS)
		return 0;
	struct vrt_replay_path x = {text, hash, 1, probe};
	return vrt_replay_push((void **)&r->paths, &r->npaths, &x, sizeof(x));
}

/* The earliest turn deadline again, after a change. */
void vrt_replay_requests_deadline(struct state *s)
{
	size_t i;

	s->turn_deadline = INT64_MAX;
	for (i = 0; i < s->nturns; i++)
		if (s->turns[i].mark &&
		    s->turns[i].mark + (int64_t)VRT_NET_QUIET_NS <
		            s->turn_deadline)
			s->turn_deadline =
			        s->turns[i].mark + (int64_t)VRT_NET_QUIET_NS;
}

static size_t turn_find(const struct state *s, uint32_t proc, uint64_t key)
{
	size_t i;
	for (i = 0; i < s->nturns; i++)
		if (s->turns[i].proc == proc && s->turns[i].key == key)
			return i;
	return SIZE_MAX;
}

/* Ends the request on (proc, key) at ts, if it is open; its bookkeeping
 * as an inferred request or a stream too. */
static void req_close(struct state *s, uint32_t proc, uint64_t key,
                      int64_t ts)
{
	struct vrt_replay *r = s->r;
	uint32_t v = vrt_replay_table_take(s, proc, SP_HREQ, key);
	size_t i;

	if (v == NONE)
		return;
	if (v == RQ_INFERRED) {
		i = turn_find(s, proc, key);
		if (i != SIZE_MAX) {
			s->turns[i] = s->turns[--s->nturns];
			vrt_replay_requests_deadline(s);
		}
		if (s->inflight_inferred)
			s->inflight_inferred--;
	}
	if (key >> 32)
		for (i = 0; i < s->nstreams; i++)
			if (s->streams[i].proc == proc &&
			    s->streams[i].key == key) {
				s->streams[i] = s->streams[--s->nstreams];
				break;
			}
	if (r->inflight)
		r->inflight--;
	vrt_replay_requests_changed(s, ts);
}

/* Inferred requests whose answer went quiet end then (the earliest
 * first), before the event at now is replayed. */
NOINLINE void vrt_replay_requests_expire(struct state *s, int64_t now)
{
	while (s->turn_deadline < now) {
		int64_t at = s->turn_deadline;
		size_t i;
		for (i = 0; i < s->nturns; i++)
			if (s->turns[i].mark &&
			    s->turns[i].mark + (int64_t)VRT_NET_QUIET_NS == at)
				break;
		if (i == s->nturns) {
			vrt_replay_requests_deadline(s);
			continue;
		}
		req_close(s, s->turns[i].proc, s->turns[i].key, at);
	}
}

/* An inferred request ended `lag` before its REQ_END (the server's last
 * write): failures in between did not have it in flight. */
static void lag_correct(struct state *s, int64_t begin, int64_t end,
                        int64_t seen)
{
	struct vrt_replay *r = s->r;
	size_t i;

	for (i = r->nfails; i-- > 0;) {
		struct vrt_replay_failure *f = &r->fails[i];
		if (f->ts <= end)
			break;
		if (f->ts > seen || f->ts < begin)
			continue;
		if (f->inflight)
			f->inflight--;
		if (f->inflight_inferred)
			f->inflight_inferred--;
	}
}

/* Sets flags on process proc's connection fd. */
static void conn_flag(struct state *s, uint32_t proc, uint64_t fd,
                      uint32_t flag)
{
	size_t i = vrt_replay_table_find(s, proc, SP_CONN, fd);
	uint32_t v = vrt_replay_slot_obj(s, i), old;

	if (v == NONE || v == CONN_LEGACY || (v & flag))
		return;
	vrt_replay_table_put(s, proc, SP_CONN, fd, v | flag, &old);
}

/* A connection of a writer that follows requests: remembered with its
 * family (and whether its peer is one of the run); its requests come as
 * REQ_BEGIN/REQ_END. */
static int conn_open(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	uint32_t old, v = CONN_KIND + vrt_net_kind(e);

	if (vrt_net_flags(e) & VRT_NET_F_PEER_RUN) {
		v |= CF_HOP;
		if (vrt_net_val(e))
			r->forwarded_from_pid = vrt_net_val(e);
	} else if (!(e->flags & VRT_EV_SNAP) && e->ts > s->last_accept_ts) {
		s->last_accept_ts = e->ts;
	}
	if (vrt_replay_table_put(s, e->proc, SP_CONN, e->addr, v, &old))
		return -1;
	if (old != NONE || (e->flags & VRT_EV_SNAP))
		return 0;
	r->connections++;
	if (e->proc < s->nprocs)
		s->conns[e->proc]++;
	return 0;
}

static int conn_close(struct state *s, const struct vrt_event *e)
{
	size_t i = vrt_replay_table_find(s, e->proc, SP_CONN, e->addr), k;
	uint32_t v = vrt_replay_slot_obj(s, i);

	if (v == CONN_LEGACY) /* the connection was the request */
		return vrt_replay_requests_edge(s, e, SP_CONN, 0);
	if (v != NONE) {
		vrt_replay_table_remove_at(s, i);
		if ((v & CF_UNCOUNTED) && s->uncounted_open)
			s->uncounted_open--;
	}
	/* Every request still in flight on it ends with it. */
	for (k = s->nstreams; k-- > 0;)
		if (s->streams[k].proc == e->proc &&
		    (s->streams[k].key & 0xffffffffu) == (e->addr & 0xffffffffu))
			req_close(s, e->proc, s->streams[k].key, e->ts);
	req_close(s, e->proc, e->addr & 0xffffffffu, e->ts);
	return 0;
}

/* A request began on a connection. */
static int req_begin(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	unsigned fl = vrt_net_flags(e);
	uint32_t conn = vrt_replay_table_get(s, e->proc, SP_CONN, e->addr);
	uint64_t key = req_key(e);
	uint32_t old, v = (fl & VRT_NET_F_INFERRED) ? RQ_INFERRED : RQ_PLAIN;
	int snap = (e->flags & VRT_EV_SNAP) != 0;

	if (conn != NONE && conn != CONN_LEGACY && (conn & CF_HOP)) {
		/* A hop between two processes of the run: the request (or
		 * the warm-up, the health check) is the run's own. */
		if (!snap && !(fl & (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL)) &&
		    !(fl & VRT_NET_F_INFERRED)) {
			r->forwarded_requests++;
			if (e->proc < s->t->nprocs)
				r->forwarded_proc_pid = s->t->procs[e->proc].pid;
		}
		return 0;
	}
	if (fl & (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL)) {
		if (snap)
			return 0;
		if (fl & VRT_NET_F_PROBE)
			r->probe_requests++;
		else
			r->internal_requests++;
		return path_note(s, e, 1);
	}
	if (e->proc < s->nprocs)
		s->ps[e->proc].served = 1;
	if (!snap)
		vrt_replay_requests_first(r, e->ts);
	if (conn != NONE && CONN_FAMILY(conn) == CONN_KIND + VRT_NET_KIND_UNIX &&
	    e->proc < s->nprocs)
		s->ps[e->proc].unix_http = 1;
	if (vrt_replay_table_put(s, e->proc, SP_HREQ, key, v, &old))
		return -1;
	if (old != NONE)
		return 0;
	if (v == RQ_INFERRED) {
		struct turn_open x = {key, e->proc, e->ts, 0};
		if (vrt_replay_push((void **)&s->turns, &s->nturns, &x,
		                    sizeof(x)))
			return -1;
		s->inflight_inferred++;
	}
	if (key >> 32) {
		struct stream_open x = {key, e->proc};
		if (vrt_replay_push((void **)&s->streams, &s->nstreams, &x,
		                    sizeof(x)))
			return -1;
	}
	r->inflight++;
	if (!snap) {
		if (v == RQ_INFERRED) {
			r->inferred_requests++;
		} else {
			if (key >> 32)
				r->stream_requests++;
			r->http_requests++;
		}
		if (path_note(s, e, 0))
			return -1;
	}
	s->snap_edge = snap;
	vrt_replay_requests_changed(s, e->ts);
	s->snap_edge = 0;
	return 0;
}

static int req_end(struct state *s, const struct vrt_event *e)
{
	uint64_t key = req_key(e);
	size_t i = vrt_replay_table_find(s, e->proc, SP_HREQ, key);
	uint32_t v = vrt_replay_slot_obj(s, i);

	if (v == NONE)
		return 0; /* ended already, a probe, or never seen begun */
	first_response(s->r, e->ts, e->size);
	if (v == RQ_INFERRED && vrt_net_val(e)) {
		/* It ended at the server's last write, lag ago. */
		int64_t lag = (int64_t)vrt_net_val(e) * 1000, begin = e->ts;
		size_t k = turn_find(s, e->proc, key);
		if (k != SIZE_MAX)
			begin = s->turns[k].begin;
		lag_correct(s, begin, e->ts - lag, e->ts);
	}
	req_close(s, e->proc, key, e->ts);
	return 0;
}

/* The server answers (or goes on answering) an inferred request. */
static void on_answer(struct state *s, const struct vrt_event *e)
{
	size_t i = turn_find(s, e->proc, req_key(e));
	if (i == SIZE_MAX)
		return;
	s->turns[i].mark = e->ts;
	vrt_replay_requests_deadline(s);
}

/* A connection's first bytes are another protocol than HTTP/1.x. */
static void on_proto(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	unsigned fl = vrt_net_flags(e);
	uint32_t conn = vrt_replay_table_get(s, e->proc, SP_CONN, e->addr);

	r->other_connections++;
	if (fl & VRT_NET_F_FOLLOWED) {
		if (e->size == VRT_NET_PROTO_HTTP2)
			conn_flag(s, e->proc, e->addr, CF_STREAMS);
		return;
	}
	/* Not followed: ZMQ's plumbing, or an older writer that followed
	 * HTTP/1.x alone. A client's connection to the server (inet, from
	 * outside the run) then has requests that cannot be counted. */
	if (e->size == VRT_NET_PROTO_ZMTP || conn == NONE ||
	    conn == CONN_LEGACY || (conn & (CF_HOP | CF_UNCOUNTED)) ||
	    CONN_FAMILY(conn) != CONN_KIND + VRT_NET_KIND_INET)
		return;
	conn_flag(s, e->proc, e->addr, CF_UNCOUNTED);
	s->uncounted_open++;
	r->uncounted_connections++;
}

int vrt_replay_requests_net(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	int by_conn = e->proc >= s->nprocs || !s->uses_requests[e->proc];
	unsigned fl = vrt_net_flags(e);

	if (e->aux == VRT_NET_LISTEN)
		return on_listen(s, e);
	if (is_request_edge(e->aux) && behind_front(s, e->proc)) {
		if (e->aux == VRT_NET_REQ_BEGIN && !(e->flags & VRT_EV_SNAP) &&
		    !(fl & (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL)))
			r->forwarded_requests++;
		return 0;
	}
	if (e->flags & VRT_EV_PAST) {
		/* Kept in standby: when requests came and went, nothing
		 * about what is open now (the snapshot says that). */
		if (fl & (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL))
			return 0;
		if (e->aux == VRT_NET_REQ_BEGIN) {
			if (e->proc < s->nprocs)
				s->ps[e->proc].served = 1;
			vrt_replay_requests_first(r, e->ts);
		} else if (e->aux == VRT_NET_REQ_END) {
			first_response(r, e->ts, e->size);
		}
		if (e->aux == VRT_NET_REQ_BEGIN || e->aux == VRT_NET_REQ_END ||
		    e->aux == VRT_NET_CLOSE) {
			struct past_edge x = {e->ts,
			                      e->aux == VRT_NET_CLOSE ? e->addr
			                                              : req_key(e),
			                      e->proc, e->aux == VRT_NET_REQ_BEGIN};
			return vrt_replay_push((void **)&s->edges, &s->nedges,
			                       &x, sizeof(x));
		}
		return 0;
	}
	switch (e->aux) {
	case VRT_NET_ACCEPT:
		if (!by_conn)
			return 0;
		if (vrt_net_kind(e) != VRT_NET_KIND_UNKNOWN)
			return conn_open(s, e);
		return vrt_replay_requests_edge(s, e, SP_CONN, 1);
	case VRT_NET_CLOSE:
		return by_conn ? conn_close(s, e) : 0;
	case VRT_NET_REQ_BEGIN:
		return by_conn ? req_begin(s, e) : 0;
	case VRT_NET_REQ_END:
		return by_conn ? req_end(s, e) : 0;
	case VRT_NET_ANSWER:
		if (by_conn)
			on_answer(s, e);
		return 0;
	case VRT_NET_PROTO:
		if (by_conn)
			on_proto(s, e);
		return 0;
	}
	return 0; /* an op from a newer writer */
}

/* Whether process p was recording at ts: from its start unless it began
 * in standby, then as its last start or stop before ts says; *since: when
 * that last change was (INT64_MIN: none). */
static int recording_at(const struct state *s, uint32_t p, int64_t ts,
                        int64_t *since)
{
	int on = p < s->t->nprocs && !s->t->procs[p].started_in_standby;
	size_t i;

	*since = INT64_MIN;
	for (i = 0; i < s->nmodes; i++) {
		const struct mode_change *m = &s->modes[i];
		if (m->proc == p && m->ts <= ts && m->ts >= *since) {
			*since = m->ts;
			on = m->on;
		}
	}
	return on;
}

/* How the requests in flight of process p changed by ts, by the edges
 * it kept since `from` (when it went to standby): a request whose last
 * edge is a begin is open (+1); one that ended without beginning in that
 * stretch was open when it stopped recording, which the replay still
 * counts (-1). */
static int64_t standby_inflight(const struct state *s, uint32_t p,
                                int64_t from, int64_t ts)
{
	int64_t n = 0;
	size_t i, j;

	for (i = 0; i < s->nedges; i++) {
		const struct past_edge *a = &s->edges[i];
		int first = 1, last = 1;
		if (a->proc != p || a->ts < from || a->ts > ts)
			continue;
		for (j = 0; j < s->nedges; j++) {
			const struct past_edge *b = &s->edges[j];
			int before;
			if (j == i || b->proc != p || b->fd != a->fd ||
			    b->ts < from || b->ts > ts)
				continue;
			before = b->ts < a->ts || (b->ts == a->ts && j < i);
			first &= !before;
			last &= before;
		}
		if (last && a->begin)
			n++;
		if (first && !a->begin)
			n--;
	}
	return n;
}

/* A failure while other processes of the run were in standby: their
 * requests then (kept edges) are in flight too. What the replay counted
 * is what the recording processes had open. */
void vrt_replay_requests_settle_inflight(struct state *s)
{
	struct vrt_replay *r = s->r;
	size_t i;
	uint32_t p;

	if (!s->nedges)
		return;
	for (i = 0; i < r->nfails; i++) {
		struct vrt_replay_failure *f = &r->fails[i];
		int64_t n = f->inflight, since;
		for (p = 0; p < s->nprocs; p++)
			if (!recording_at(s, p, f->ts, &since))
				n += standby_inflight(s, p, since, f->ts);
		f->inflight = n > 0 ? (uint32_t)n : 0;
		/* at least that many were in flight at some point */
		if (f->inflight > r->max_inflight) {
			r->max_inflight = f->inflight;
			r->max_inflight_ts = f->ts;
		}
	}
}

/* Serving from facts kept in standby: a process that was in standby when
 * its first request came keeps it as a fact, read out of time order, so
 * serving may have begun before the stream said. A failure of a
 * per-request phase with requests in flight after that moment is of the
 * request stage, as stage_request would have said had it known. */
void vrt_replay_requests_settle_serving(struct state *s)
{
	struct vrt_replay *r = s->r;
	size_t i;

	if (r->have_first_request &&
	    (!r->serving || r->first_request_ts < r->serving_ts)) {
		r->serving = 1;
		r->serving_ts = r->first_request_ts;
	}
	if (!r->serving)
		return;
	for (i = 0; i < r->nfails; i++) {
		struct vrt_replay_failure *f = &r->fails[i];
		if (!f->after_ready && f->ts >= r->serving_ts && f->inflight &&
		    f->phase != VRT_PHASE_weights &&
		    vrt_replay_slot_is_demand(f->phase))
			f->after_ready = 1;
	}
}

/* The server's socket from the listen() facts, and readiness (see
 * replay.h): facts kept in standby arrive out of time order, so both are
 * settled here. */
void vrt_replay_requests_settle_ready(struct state *s)
{
	struct vrt_replay *r = s->r;
	const struct listen_seen *best = NULL;
	int kind = VRT_NET_KIND_UNKNOWN;
	size_t i;

	if (s->inet.have) {
		best = &s->inet;
		kind = VRT_NET_KIND_INET;
	} else {
		for (i = 0; i < s->nprocs; i++) {
			const struct listen_seen *u = &s->ps[i].unix_listen;
			if (u->have && s->ps[i].unix_http &&
			    (!best || u->ts < best->ts)) {
				best = u;
				kind = VRT_NET_KIND_UNIX;
			}
		}
		if (!best && s->unknown.have)
			best = &s->unknown;
	}
	r->have_server_ready = best != NULL;
	if (best) {
		r->server_ready_ts = best->ts;
		r->server_ready_proc = best->proc;
		r->server_port = best->port;
		r->server_ready_kind = kind;
	}
	if (r->have_first_ok_response) {
		r->have_ready = 1;
		r->ready_from = VRT_READY_RESPONSE;
		r->ready_ts = r->first_ok_response_ts;
	} else if (best && s->last_load_ts != INT64_MIN &&
	           s->last_accept_ts > s->last_load_ts &&
	           s->last_load_fail_ts < s->last_load_ts &&
	           (r->uncounted_connections || r->inferred_requests ||
	            s->legacy_conns)) {
		/* No request answered that could be read (a protocol not
		 * followed, turns without status, an older writer's
		 * connections): the load phases ended, then a client
		 * connected, and nothing of the load failed after. */
		r->have_ready = 1;
		r->ready_from = VRT_READY_LOAD_END;
		/* ... and not before it listened */
		r->ready_ts = s->last_load_ts > best->ts ? s->last_load_ts
		                                         : best->ts;
	}
}
