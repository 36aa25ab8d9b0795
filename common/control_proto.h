/*
 * control_proto.h — the control protocol, the one contract between a
 * traced process's control endpoint (preload/control.c, the server) and
 * its clients, `vramtrace ctl` and `vramtrace live` (analyzer/record/ctl.c,
 * cmd_ctl.c, cmd_live.c). Header only: both sides include it and link
 * nothing of the other.
 *
 * Endpoint: a UNIX stream socket "<run dir>/<pid>" VRT_CONTROL_SUFFIX
 * (mode 0600) in a trusted run directory (rundir.h). Only a peer with the
 * server's uid (or root) is served.
 *
 * One command per connection: the client writes one line (at most
 * VRT_CONTROL_LINE_MAX bytes are read, a newline ends it), the server
 * answers one line and closes. Commands and their answers:
 *
 *   start        "ok recording", "ok already recording",
 *                "error cannot start recording"
 *   stop         "ok standby", "ok already standby"
 *   mark LABEL   "ok" (a MARK record with LABEL), or
 *                "ok not recording (standby): no mark"
 *   flush        "ok" once the frame is on disk (bounded)
 *   status       one JSON object (below)
 *
 * Anything else, or a peer of another uid, gets "error MESSAGE". A client
 * counts an answer of VRT_CONTROL_OK alone or followed by a space as
 * success.
 *
 * status: {"pid":N,"ppid":N,"state":"recording"|"standby","events":N,
 * "dropped":N,"inflight":N,"ooms":N,"pinned_bytes":N,"allocations":N,
 * "devices":[{"id":N,"vendor":"cuda"|"hip","live_bytes":N,
 * "total_bytes":N,"phases":{"<phase>":N,...}},...]}
 *   events, dropped   events recorded and dropped so far
 *   inflight          requests in flight now; ooms: failed allocations
 *   pinned_bytes      pinned host memory held; allocations: live count
 *   total_bytes       the device's capacity from the inventory (0 unknown)
 *   phases            live bytes per built-in phase, nonzero ones only
 * A client also reads an optional "trace" (a path, shown when present),
 * which this server does not send.
 */
#ifndef VRT_CONTROL_PROTO_H
#define VRT_CONTROL_PROTO_H

#define VRT_CONTROL_SUFFIX   ".ctl" /* "<pid>.ctl" in the run directory */
#define VRT_CONTROL_LINE_MAX 512    /* longest command line read */

/* Commands. */
#define VRT_CONTROL_START  "start"
#define VRT_CONTROL_STOP   "stop"
#define VRT_CONTROL_MARK   "mark" /* followed by a space and the label */
#define VRT_CONTROL_FLUSH  "flush"
#define VRT_CONTROL_STATUS "status"

/* The first word of every answer but status's. */
#define VRT_CONTROL_OK    "ok"
#define VRT_CONTROL_ERROR "error"

/* The status object: its keys and the values of "state". */
#define VRT_CONTROL_STATE_RECORDING "recording"
#define VRT_CONTROL_STATE_STANDBY   "standby"
#define VRT_CONTROL_K_PID           "pid"
#define VRT_CONTROL_K_PPID          "ppid"
#define VRT_CONTROL_K_STATE         "state"
#define VRT_CONTROL_K_TRACE         "trace"
#define VRT_CONTROL_K_EVENTS        "events"
#define VRT_CONTROL_K_DROPPED       "dropped"
#define VRT_CONTROL_K_INFLIGHT      "inflight"
#define VRT_CONTROL_K_OOMS          "ooms"
#define VRT_CONTROL_K_PINNED        "pinned_bytes"
#define VRT_CONTROL_K_ALLOCATIONS   "allocations"
#define VRT_CONTROL_K_DEVICES       "devices"
#define VRT_CONTROL_K_ID            "id"
#define VRT_CONTROL_K_VENDOR        "vendor"
#define VRT_CONTROL_K_LIVE          "live_bytes"
#define VRT_CONTROL_K_TOTAL         "total_bytes"
#define VRT_CONTROL_K_PHASES        "phases"

/* "\"key\":" for the server's format strings. */
#define VRT_CONTROL_KEY(k) "\"" k "\":"

#endif /* VRT_CONTROL_PROTO_H */
