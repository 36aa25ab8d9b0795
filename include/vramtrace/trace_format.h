/*
 * vramtrace trace format — the contract between the preload (writer) and
 * the analyzer (reader). Beside it the two sides share only the pure code
 * of common/ (the phase rules engine and built-in rules, the engine of a
 * command line, the run directory checks, path names): never state, and
 * neither links the other's code (docs/design.md "Layers").
 *
 * A run is a directory; each traced process that makes a GPU memory call
 * writes one file named "<pid>.vtrace" (VRT_TRACE_SUFFIX; "<pid>-<n>.vtrace"
 * if that name is taken) into it; so does the command `vramtrace record`
 * started (VRAMTRACE_ROOT names its pid), even without a GPU call, at its
 * exit. "<pid>.exit" holds one line, "exit N" or "signal N": `vramtrace
 * record` writes it for the command it started and every orphan it
 * reaps, and a traced process for each traced child it reaps.
 *
 * File:   a sequence of independent zstd frames. A frame is closed at least
 *         every ~100 ms or every few MiB, and at once after a failed
 *         allocation, so a file cut by SIGKILL decodes up to its last
 *         complete frame. Records never straddle two frames.
 *
 * Record: u8 type | uvarint payload_len | payload[payload_len]
 *         The length lets a reader skip record types it does not know, and
 *         fields appended to a known record in a later minor revision
 *         (readers must ignore trailing bytes they do not understand).
 *         VRT_TRACE_VERSION changes only for incompatible changes.
 *
 * Integers are little-endian base-128 varints (uvarint); signed values are
 * zigzag-encoded (svarint). A "str" is uvarint length + bytes (no NUL).
 * Timestamps are CLOCK_MONOTONIC nanoseconds, comparable across the
 * processes of one host.
 *
 * Event records (ALLOC, FREE, MAP, UNMAP, FAIL, MEMINFO, MARK, NET, PROC,
 * REQUEST, SAMPLE, SNAPSHOT, REPEAT, ALLOC_C, FREE_C, PAST, BATCH) only appear
 * after a CHUNK record in the same frame. CHUNK sets the thread id and the
 * absolute timestamp base; each event record's first field is the delta
 * (dts) from the previous event of the chunk (or from the CHUNK base for
 * the first; a BATCH's is its span, see there). Events inside one
 * chunk come from one thread in time order; chunks of different threads
 * interleave, so a reader orders events by timestamp. A WATERMARK record
 * promises that every event with ts < watermark is already in the file.
 *
 * Thread safety: everything here is pure inline code over caller buffers,
 * safe anywhere, including inside a hook.
 */
#ifndef VRAMTRACE_TRACE_FORMAT_H
#define VRAMTRACE_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define VRT_TRACE_MAGIC     "VRAMTRC\x01" /* 8 bytes, first field of HEADER */
#define VRT_TRACE_MAGIC_LEN 8
#define VRT_TRACE_VERSION   5 /* 2 added REPEAT, ALLOC_C, FREE_C; 3 packs
                                   * their addr_delta and size (below);
                                   * 4 added BATCH; 5 changed BATCH's
                                   * columns (sizes, time unit, pairs).
                                   * Writers write it; readers take
                                   * VRT_TRACE_VERSION_OLDEST to it */
#define VRT_TRACE_VERSION_OLDEST 1 /* the oldest version readers take */
#define VRT_TRACE_SUFFIX    ".vtrace"
#define VRT_REC_MAX_PAYLOAD (64u * 1024u) /* writers never exceed this */

/* Record types. Payload fields in order; (s) = svarint, (str) = string. */
enum vrt_rec {
	/* The first record of the file, exactly once.
	 * magic[8] raw, version, pid, ppid, start_wall_ns (CLOCK_REALTIME),
	 * start_mono_ns, flags (VRT_HEADER_*), host(str), exe(str), argc,
	 * argv[argc](str). start_*: when the process's capture began — its
	 * first event, recording or in standby. */
	VRT_REC_HEADER = 1,
	/* vendor (enum vrt_vendor), ordinal, total_bytes, name(str),
	 * uuid(str: 16 raw bytes, or empty). Readers show a CUDA uuid as
	 * nvidia-smi does: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx. */
	VRT_REC_DEVICE = 2,
	/* id, text(str) — interned strings (symbols, modules, files,
	 * function names). Ids are per file, from 1; 0 means "none". */
	VRT_REC_STRING = 3,
	/* id, kind (enum vrt_frame_kind), then
	 *   native: ip, module(string id), symbol(string id, 0 unknown),
	 *           offset (ip - symbol start, 0 unknown)
	 *   python: file(string id), function(string id: qualified name),
	 *           line
	 * Frame ids are per file, from 1. */
	VRT_REC_FRAME = 4,
	/* id, parent(stack id, 0 = root), frame(frame id), phase — one node
	 * of the trie of call paths, root = outermost frame. An event's stack
	 * id names its innermost node; the call path is read by following
	 * parents. Python frames (outer → inner) come first, then native
	 * frames (outer → inner). phase: the preload's default tag for events
	 * with this stack (VRT_PHASE_* encoding below, source RULE), computed
	 * from every frame on the path; a reader may re-classify with other
	 * rules. Stack ids are per file, from 1. STRING, FRAME and STACK
	 * records may come after the events that use them (but in the same
	 * file); readers resolve stacks once everything is read. */
	VRT_REC_STACK = 5,
	/* tid, ts_abs — opens a thread chunk */
	VRT_REC_CHUNK = 6,
	/* dts, api, device(s), addr, size, aux, stack, phase
	 * aux: stream for stream-ordered calls, pool for pool calls, flags
	 * for cuMemHostAlloc/Register/Managed/VMM; addr is the VMM handle for
	 * cuMemCreate. */
	VRT_REC_ALLOC = 7,
	/* dts, api, device(s), addr, aux, stack, phase — addr is the VMM
	 * handle for cuMemRelease. Readers charge a free to the device and
	 * family of the allocation it ends; device here is informational
	 * (the caller's current device, or VRT_DEVICE_UNKNOWN). */
	VRT_REC_FREE = 8,
	/* dts, api, device(s), addr, size, offset, handle, stack, phase */
	VRT_REC_MAP = 9,
	/* dts, api, device(s), addr, size, stack, phase */
	VRT_REC_UNMAP = 10,
	/* dts, api, device(s), addr (the pointer a failed free/unmap named,
	 * else 0), size (requested bytes, 0 for frees), aux, error (vendor
	 * code), have_info (0/1), free_bytes, total_bytes (driver's
	 * cuMemGetInfo right after the failure; 0 when have_info is 0),
	 * stack, phase. device: the one the call named (VMM location), else
	 * the caller's current device; VRT_DEVICE_HOST for host families. */
	VRT_REC_FAIL = 11,
	/* dts, device(s), free_bytes, total_bytes, stack, api, held — the
	 * application's own capacity probe (cuMemGetInfo / hipMemGetInfo).
	 * Older writers end the record early: no stack means none, no api
	 * means a CUDA probe. held (only inside PAST): the bytes this
	 * process held on the device at that moment, which a reader cannot
	 * know from events it never saw. */
	VRT_REC_MEMINFO = 12,
	/* chunk event: dts, label(str) — vramtrace_mark() or `ctl mark` */
	VRT_REC_MARK = 13,
	/* chunk event from the sampler thread (every VRAMTRACE_SAMPLE_MS):
	 * dts, kind (enum vrt_sample_kind), then
	 *   DEVICE: device(s) (ordinal as the process sees it), used_bytes,
	 *           total_bytes (NVML: whole device, every process), nprocs,
	 *           nprocs x (pid, used_bytes) — the processes on the device
	 *   HOST:   rss_bytes (this process), mem_available_bytes,
	 *           swap_total_bytes, swap_free_bytes (the machine) */
	VRT_REC_SAMPLE = 14,
	/* id, name(str) — a phase id's name. Ids 0..VRT_PHASE_BUILTIN_MAX
	 * are fixed (below) and need no record; others (custom phases from
	 * user rules or the annotation API) are declared before or after use
	 * in the same file. */
	VRT_REC_PHASE = 15,
	/* ts_abs — every event with ts < ts_abs is already written */
	VRT_REC_WATERMARK = 16,
	/* end_mono_ns, flags (VRT_TRAILER_*), events_written,
	 * events_dropped, note(str: why capture stopped, or empty), then
	 * (appended later, absent from older writers) exit_kind
	 * (VRT_TRAILER_EXIT_*), exit_code: how the process left, as it knew
	 * it (exit() and return from main, _exit) */
	VRT_REC_TRAILER = 17,
	/* chunk event: dts, op (enum vrt_net_op), fd, arg, then (appended
	 * later, each absent from older writers and read as 0) kind (enum
	 * vrt_net_kind), stream, flags (VRT_NET_F_*), val, text(str)
	 *   LISTEN:    arg = port (0 for a non-inet socket); kind: the
	 *              socket's family; flags INTERNAL when a library's own
	 *              plumbing listens (NCCL, ZMQ, torch.distributed, ...:
	 *              its connections are not followed) — a socket starts
	 *              listening
	 *   ACCEPT:    arg = the listening fd; kind: the connection's family;
	 *              flags PEER_RUN when the peer is a process of the same
	 *              run (its requests are a hop of the run's own: a front
	 *              forwarding, a warm-up); val = the peer's pid where
	 *              known (unix sockets) — a connection opens. A writer
	 *              that writes kind also writes REQ_BEGIN/REQ_END for the
	 *              requests on it (and PROTO when its first bytes are
	 *              not HTTP/1.x): readers then count requests, not
	 *              connections; an ACCEPT without kind (older writers) is
	 *              a request in flight until its CLOSE.
	 *   CLOSE:     arg = 0 — an accepted connection closes (every request
	 *              still open on it ends with it)
	 *   REQ_BEGIN: arg = 0; stream = the HTTP/2 stream (0: a connection
	 *              with one request at a time); flags PROBE (a health,
	 *              readiness, metrics or metadata poll: counted apart,
	 *              never in flight), INFERRED (from turn-taking, conn.h),
	 *              INTERNAL (a cluster runtime's RPC: not a request);
	 *              val = a hash of the request's path (FNV-1a, 0: none);
	 *              text = the path, when the writer read it (cut to 64
	 *              bytes) — a request is in flight on (fd, stream)
	 *   REQ_END:   arg = the response's status code (HTTP/2: 200 for a
	 *              stream the server ended, 0 for a reset); stream as for
	 *              REQ_BEGIN; val (INFERRED) = ns since the server's last
	 *              write: the request ended that long before this record
	 *              — the response has been written completely (HTTP/1.x
	 *              by its framing: Content-Length, chunked up to the zero
	 *              chunk; a close-delimited response ends at CLOSE)
	 *   PROTO:     arg = enum vrt_net_proto — the connection's first bytes
	 *              are not an HTTP/1.x request (or it switched protocol
	 *              after a 101); flags FOLLOWED when requests on it are
	 *              written from now on (HTTP/2 streams, turns), else
	 *              nothing on it is counted
	 *   ANSWER:    (INFERRED requests) the server wrote the first bytes
	 *              of its answer to the request in flight on fd, or goes
	 *              on writing it (at most one per half second): a reader
	 *              takes the answer as over VRT_NET_QUIET_NS after the
	 *              last ANSWER when no REQ_END came before */
	VRT_REC_NET = 18,
	/* chunk event: dts, op (enum vrt_proc_op), pid, text(str)
	 *   FORK: pid = the child;  SPAWN: pid = the child, text = path;
	 *   EXEC: pid = 0, text = path (written just before exec) */
	VRT_REC_PROC = 19,
	/* chunk event: dts, op (1 begin, 2 end), request id —
	 * vramtrace_request_begin/end() */
	VRT_REC_REQUEST = 20,
	/* chunk event: dts, op (1 begin, 2 end) — written when recording
	 * starts in a process that was in standby (`vramtrace ctl start`, or
	 * a failed allocation in standby): the ALLOC records between begin
	 * and end of the same thread are the process's live allocations at
	 * that moment, not new calls, and its NET ACCEPT and REQ_BEGIN
	 * records there its open connections and requests in flight. A
	 * reader replaces what it held live (and open) for this process by
	 * exactly that set (an address it already holds live stays as it
	 * is), counting none of it as allocations, frees or new
	 * connections. PAST records of the process come just before.
	 * op 3 (alone): recording stops here (`ctl stop`); the process is in
	 * standby until its next begin. */
	VRT_REC_SNAPSHOT = 21,
	/* chunk event (version 2): dts, count, span, period, then `period`
	 * pair templates, each: alloc_api, free_api, device(s),
	 * free_device(s), size, aux, free_aux, stack, phase —
	 * `count` more allocate-then-free pairs of this thread folded into
	 * one record: each an ALLOC (alloc_api, device, size, aux, stack,
	 * phase) whose very next event in the thread was the FREE (free_api,
	 * free_device, free_aux, stack 0, the same phase) of the same address.
	 * The folded pairs continue a cycle of `period` pairs (1..8): the
	 * k-th folded pair (from 0) is template k % period. Addresses are not
	 * recorded. This record's time (dts from the previous event of the
	 * chunk, as usual) is the last pair's ALLOC's, its FREE following
	 * before the thread's next event (a writer reads no clock for a pair
	 * it folds); the first folded pair's ALLOC `span` ns before it. A reader counts count
	 * allocations and count frees; their bytes were live only between
	 * each alloc and its free, so a reader that tracks peaks counts one
	 * template's size at a time on top of what is live at the record's
	 * time. The writer folds only pairs that repeat the pairs its thread
	 * wrote just before them, in this chunk or the thread's previous ones
	 * (so the first cycle of a run is always written in full once);
	 * readers may rely on nothing else: a REPEAT may open a chunk. */
	VRT_REC_REPEAT = 22,
	/* chunk event (version 2): dts, addr_delta(s), size, stack — an
	 * ALLOC whose api, device, aux and phase are those of the chunk's
	 * alloc template (below); addr = the chunk's last address +
	 * addr_delta (mod 2^64). From version 3, addr_delta is a packed
	 * svarint and size a packed uvarint (vrt_pack_u below). */
	VRT_REC_ALLOC_C = 23,
	/* chunk event (version 2): dts, addr_delta(s) — a FREE whose api,
	 * device, aux, stack and phase are those of the chunk's free
	 * template; addr as for ALLOC_C (packed from version 3). */
	VRT_REC_FREE_C = 24,
	/* 25: reserved. */
	/* chunk event: dts, type, at, then the payload of a record of that
	 * type (NET, PROC, REQUEST, MEMINFO or SAMPLE) after its dts — a
	 * fact of a
	 * process in standby, kept since it happened and written when
	 * recording starts (next to its SNAPSHOT), or when a failed
	 * allocation in standby makes the process write one. at: when it
	 * happened (CLOCK_MONOTONIC ns), before the record's own time. A
	 * reader takes it as that event at time at, knowing that it may
	 * arrive after later events (it changes the facts of that moment —
	 * the server was ready, a child was made, the first probe —, not
	 * the live set). */
	VRT_REC_PAST = 26,
	/* chunk event: dts, api, device(s), addr, size, stack, phase (as
	 * UNMAP) — a free (api) of addr, a pointer the process allocated
	 * before `vramtrace attach` began its recording, which the
	 * recording's SNAPSHOT did not name: size is what the driver said
	 * the allocation held (asked before the free), device where. A
	 * reader frees addr if it holds it live (then it is an ordinary
	 * FREE), else takes size bytes off the process's before_attach
	 * allocation on device (VRT_BEFORE_ATTACH_ADDR; never below zero),
	 * and counts a free either way. */
	VRT_REC_PREFREE = 27,
	/* chunk event (version 4): span, n, flags, then the byte lengths of
	 * the first eight columns (kind, time, asite, fsite, size, aaddr,
	 * faddr, addr), then the nine columns one after the other (def takes
	 * the rest of the payload) — n ALLOC and FREE events of the chunk's
	 * thread, written column by column against the thread's batch state
	 * (below), which lasts across the thread's chunks. span: ns from the
	 * time before the record to the time after it (the last event's
	 * exact time: the records after a BATCH keep their dts).
	 * Version 5: span, n, flags, pairs, the byte lengths of the first
	 * ten columns (kind, time, asite, fsite, size, sizelo, sizenew,
	 * aaddr, faddr, addr), then the eleven columns (def the rest): n
	 * events, pairs of them allocations freed at once (each an
	 * allocation and a free), against the version 5 state (below). */
	VRT_REC_BATCH = 30,
};

#define VRT_REPEAT_MAX_PERIOD 8 /* pair templates in one REPEAT */

/*
 * `vramtrace attach` (VRT_HEADER_ATTACHED): what the process held on a
 * device before the attach and the snapshot could not name allocation by
 * allocation (no caching allocator to ask, the driver's own context,
 * libraries' buffers) is one ALLOC of the first SNAPSHOT at address
 * VRT_BEFORE_ATTACH_ADDR(device) (inside the first page: never a real
 * pointer) with the phase named VRT_BEFORE_ATTACH_PHASE (a PHASE record,
 * source ANNOTATION), its aux saying how its size was measured (below).
 * PREFREE records shrink it. Allocations the snapshot names (PyTorch's
 * segments) are ordinary snapshot ALLOCs, with their recorded stacks or
 * the same phase.
 */
#define VRT_BEFORE_ATTACH_PHASE   "before_attach"
#define VRT_BEFORE_ATTACH_ADDR(d) ((uint64_t)(d) + 1)
enum vrt_before_attach_source {
	VRT_BEFORE_ATTACH_NVML = 1,   /* NVML: this process's own bytes */
	VRT_BEFORE_ATTACH_DRIVER = 2, /* the driver's used bytes (total -
	                               * free): every process's, an upper
	                               * bound */
};

/*
 * Compact state of a chunk (version 2), for ALLOC_C and FREE_C: the last
 * address (of the last ALLOC, FREE, ALLOC_C or FREE_C), the alloc template
 * (api, device, aux, phase of the last ALLOC record) and the free template
 * (api, device, aux, stack, phase of the last FREE record). All of it is
 * reset (address 0, no templates) by a CHUNK and by every record other
 * than ALLOC, FREE, REPEAT, ALLOC_C and FREE_C, so a reader can decode any
 * stretch of a chunk's hot records that follows such a record on its own.
 * An ALLOC_C or FREE_C without a template is malformed.
 */

/*
 * BATCH (version 4). The state of a thread's batches, kept per thread id
 * of the file, empty at the thread's first BATCH and emptied again by a
 * BATCH with VRT_BATCH_RESET in its flags (before its events):
 *   sites  up to VRT_BATCH_SITES, each (kind, api, device, aux, phase,
 *          stack) and, for an alloc site, its last size; defined in
 *          order into slots 0, 1, ..., then over again from slot 0
 *   sizes  up to VRT_BATCH_SIZES sizes, each with a last-in-
 *          first-out list of at most VRT_BATCH_LIFO freed addresses;
 *          slots 0, 1, ... in order of definition, never replaced (a size
 *          defined once the table is full has no slot)
 *   ring   the thread's last VRT_BATCH_RING allocations (address, size
 *          slot or none), and how many it made
 *   last_alloc, last_free: address registers (0)
 * Event i (from 0) reads, each column in turn from its start:
 *   kind   bit i % 8 of byte i / 8: 0 ALLOC, 1 FREE
 *   time   uvarint v: v even, the time advances by (v >> 1) microseconds;
 *          odd, by (v >> 1) ns, from the previous event's (the first:
 *          from the time before the record)
 *   ALLOC: asite  uvarint c: c >= 1 the site in slot c - 1 (an alloc
 *                 site); 0 a new alloc site, its api, device(s), aux,
 *                 phase, stack read from def, into the next slot
 *          size   uvarint z: 0 the site's last size (it has one); 1 a new
 *                 size, a packed uvarint (vrt_pack_u) from size itself,
 *                 into the next size slot if there is room; z >= 2 the
 *                 size in slot z - 2. Becomes the site's last size.
 *          aaddr  uvarint a: 0 the address is last_alloc + a packed
 *                 svarint (vrt_pack_s) read from addr; a >= 1 the entry
 *                 a - 1 from the top of the size's list (its slot has
 *                 one), which leaves the list. last_alloc = the address;
 *                 the allocation joins the ring.
 *   FREE:  fsite  as asite, for a free site (api, device(s), aux, phase,
 *                 stack from def); the FREE has the site's fields
 *          faddr  uvarint a: 0 the address is last_free + a packed
 *                 svarint from addr, and last_free = the address; a >= 1
 *                 (at most the ring's size and the allocations made) the
 *                 address of the allocation made a allocations ago (1 =
 *                 the latest), which then goes on top of its size's list
 *                 (dropping the list's bottom entry when full) if it has a
 *                 size slot.
 * Anything else (a value out of range, a column too short, a site of the
 * other kind, an entry the list does not have) makes the record
 * malformed. A thread's BATCH records are written in the order of their
 * events, so a reader that takes each thread's events in time order (ties
 * in record order) applies them in the order written. A writer chooses
 * the codes (which it can: the state is the same on both sides); the
 * preload gives an event whose address is not from the state (a = 0) its
 * exact time, so that events of different threads on the same address
 * keep their order.
 */
#define VRT_BATCH_RESET 1 /* flags: the thread's batch state starts over */
#define VRT_BATCH_SITES 4096
#define VRT_BATCH_SIZES 1024
#define VRT_BATCH_LIFO  16
#define VRT_BATCH_RING  4096
#define VRT_BATCH_COLS  9 /* kind time asite fsite size aaddr faddr addr def */

/*
 * BATCH (version 5). What varies from one allocation to the next in a
 * server without size classes (PyTorch's cudaMallocAsync backend: every
 * tensor shape is a size) is the size, and, at a server's pace, the
 * time; version 5 writes both against more of what a reader already
 * knows. The state of a thread's batches, emptied as in version 4:
 *   sites    as in version 4 (VRT_BATCH_SITES, defined round the
 *            table); an alloc site also keeps its recent sizes: up to
 *            VRT_BATCH_MTF size slots, most recently used first, empty
 *            when the site is defined
 *   sizes    VRT_BATCH5_SIZES slots, each a size and the class slot it
 *            was last found in (none at first); new sizes are defined
 *            into slots 0, 1, ..., then over again from slot 0, each
 *            replacing what the slot held (a site's recent sizes name
 *            slots: an entry whose slot was given a new size names that
 *            size)
 *   classes  VRT_BATCH5_CLASSES slots, each a class (a size rounded up
 *            to VRT_BATCH_GRAIN bytes, the granularity a device
 *            allocation takes: two requested sizes that round alike get
 *            each other's freed blocks back from a pool) and a last-in-
 *            first-out list of at most VRT_BATCH_LIFO freed addresses;
 *            defined round the table as sizes are, each definition
 *            emptying the slot's list
 *   ring     the thread's last VRT_BATCH_RING allocations (address and
 *            class slot), and how many it made
 *   last_alloc, last_free: address registers (0)
 * An ALLOC that is not a pair looks up its size's class (after its size
 * is read): the class slot the size slot names, if that slot still holds
 * the size's class; else the slot that holds it (found among all), else
 * the next class slot, defined now; the size slot then names it.
 * Flags: bit 0 VRT_BATCH_RESET; bits 1 to 6 the time unit's shift u
 * (unit U = 2^u ns, u <= 40). Event i (from 0) reads, each column in
 * turn from its start:
 *   kind   bit i % 8 of byte i / 8: 0 ALLOC (or a pair), 1 FREE
 *   time   uvarint v. v odd: the time is the previous event's + (v >> 1)
 *          ns (exact). v even, k = v >> 1: k = 0, the previous event's
 *          time; else the previous event's time with its low u bits
 *          cleared, + k * U. The first event's previous time is the
 *          time before the record.
 *   ALLOC: asite  as in version 4
 *          size   one byte z: z < VRT_BATCH_MTF, entry z of the site's
 *                 recent sizes (it has one); VRT_BATCH_MTF <= z <
 *                 VRT_BATCH_MTF + VRT_BATCH5_SIZES / 256, the size slot
 *                 (z - VRT_BATCH_MTF) << 8 | the next byte of sizelo (it
 *                 holds a size); z = 255, a new size, a packed uvarint
 *                 read from sizenew, defined into the next size slot.
 *                 The size's slot then goes first in the site's recent
 *                 sizes (out of where it was, or the last one drops).
 *          aaddr  uvarint a: 0, the address is last_alloc + a packed
 *                 svarint read from addr; 1 <= a <= VRT_BATCH_LIFO, the
 *                 entry a - 1 from the top of the list of the size's
 *                 class, which leaves the list. Either way last_alloc =
 *                 the address and the allocation joins the ring.
 *                 a = VRT_BATCH_PAIR: a pair, an allocation with no
 *                 address whose free follows it at once (the two of a
 *                 REPEAT record's pair): the free's site is read from
 *                 fsite (a free site); nothing else changes (no address
 *                 register, no ring).
 *   FREE:  fsite, faddr as in version 4; a freed allocation of the ring
 *          goes on top of the list of its class, dropping the list's
 *          bottom entry when full, unless its class slot was defined
 *          again since the allocation.
 * The same things as in version 4 make the record malformed, and: a size
 * byte out of range or naming an empty entry or slot, a time unit over
 * 40, a number of pairs other than the events that are pairs. A version
 * 5 BATCH may be up to VRT_BATCH5_MAX_PAYLOAD long (the preload writes a
 * thread's events of a frame as one). A writer chooses the codes; the
 * preload writes an event's time exact (v odd) when rounding it could
 * move it before an event of another thread that it followed: another
 * thread's event on the same address in the same writer pass, an event
 * of another thread that is not an allocation or free (a failure, a
 * request, a mark, a sample...) between the rounded time and the exact
 * one, or the end of the previous writer pass (WATERMARK); every other
 * time is rounded, at most one unit early and never before the thread's
 * previous event.
 */
#define VRT_BATCH_MTF      8    /* recent sizes per alloc site */
#define VRT_BATCH5_SIZES   4096 /* size slots (a multiple of 256) */
#define VRT_BATCH5_CLASSES 4096 /* class slots */
#define VRT_BATCH_GRAIN    512  /* bytes a class rounds to */
#define VRT_BATCH_PAIR     (VRT_BATCH_LIFO + 1) /* aaddr: a pair */
#define VRT_BATCH_NEWSIZE  255  /* size byte: a new size */
#define VRT_BATCH_UNIT_MAX 40   /* largest time unit shift */
#define VRT_BATCH5_COLS    11   /* kind time asite fsite size sizelo
                                 * sizenew aaddr faddr addr def */
#define VRT_BATCH5_MAX_PAYLOAD (1u << 20) /* a version 5 BATCH may be this
                                           * long (others:
                                           * VRT_REC_MAX_PAYLOAD) */

enum vrt_frame_kind { VRT_FRAME_NATIVE = 0, VRT_FRAME_PYTHON = 1 };

enum vrt_net_op {
	VRT_NET_LISTEN = 1,
	VRT_NET_ACCEPT = 2,
	VRT_NET_CLOSE = 3,
	VRT_NET_REQ_BEGIN = 4,
	VRT_NET_REQ_END = 5,
	VRT_NET_PROTO = 6,
	VRT_NET_ANSWER = 7,
};

/* NET flags (the appended flags field). */
enum vrt_net_flag {
	VRT_NET_F_PROBE = 1,    /* REQ_BEGIN: a probe (reqpath.h) */
	VRT_NET_F_INFERRED = 2, /* REQ_BEGIN/END, ANSWER: from turn-taking */
	VRT_NET_F_INTERNAL = 4, /* LISTEN: a library's plumbing; REQ_BEGIN:
	                         * a cluster runtime's RPC */
	VRT_NET_F_PEER_RUN = 8, /* ACCEPT: the peer is a process of the run */
	VRT_NET_F_FOLLOWED = 16, /* PROTO: requests on it are written */
};

/* An inferred request's answer is over after this long without a write. */
#define VRT_NET_QUIET_NS 1000000000ull

/* The family of a NET record's socket (its appended kind field). */
enum vrt_net_kind {
	VRT_NET_KIND_UNKNOWN = 0, /* older writers */
	VRT_NET_KIND_INET = 1,    /* TCP over IPv4 or IPv6 */
	VRT_NET_KIND_UNIX = 2,    /* AF_UNIX (ZMQ ipc://, local proxies) */
	VRT_NET_KIND_OTHER = 3,
};

/* What a connection's first bytes were, when not HTTP/1.x (PROTO). */
enum vrt_net_proto {
	VRT_NET_PROTO_HTTP2 = 1, /* the "PRI * HTTP/2.0" preface (gRPC), or
	                          * a 101 to h2c */
	VRT_NET_PROTO_TLS = 2,   /* a TLS handshake record */
	VRT_NET_PROTO_OTHER = 3, /* anything else: a protocol of its own */
	VRT_NET_PROTO_ZMTP = 4,  /* ZMQ's greeting (plumbing: not followed) */
	VRT_NET_PROTO_WEBSOCKET = 5, /* a 101 to a WebSocket */
};

enum vrt_sample_kind { VRT_SAMPLE_DEVICE = 1, VRT_SAMPLE_HOST = 2 };

enum vrt_proc_op { VRT_PROC_FORK = 1, VRT_PROC_EXEC = 2, VRT_PROC_SPAWN = 3 };

/*
 * Phases. The "phase" field of events and STACK records holds
 * phase_id * 4 + source. Ids below are fixed; higher ids are named by
 * PHASE records. A source says who decided:
 *   RULE       a rule over the call stack (the preload's default; STACK)
 *   ANNOTATION the application said so (vramtrace_phase_push); wins over
 *              rules, a reader never re-classifies it
 *   INFERRED   evidence, not a rule (analyzer only, reported as such)
 * Phase id 0 is "unattributed" whatever the source.
 */
#define VRT_PHASE_LIST(X)                                                      \
	X(0, unattributed)                                                     \
	X(1, weights)                                                          \
	X(2, kv_cache)                                                         \
	X(3, forward)                                                          \
	X(4, profile)                                                          \
	X(5, cuda_graph)                                                       \
	X(6, comm)                                                             \
	X(7, workspace)

enum vrt_phase_id {
#define VRT_X_PHASE(id, name) VRT_PHASE_##name = id,
	VRT_PHASE_LIST(VRT_X_PHASE)
#undef VRT_X_PHASE
	        VRT_PHASE_BUILTIN_MAX = 7,
	VRT_PHASE_FIRST_CUSTOM = 16
};

enum vrt_phase_source {
	VRT_SRC_RULE = 0,
	VRT_SRC_ANNOTATION = 1,
	VRT_SRC_INFERRED = 2
};

static inline uint64_t vrt_phase_encode(unsigned id, unsigned source)
{
	return (uint64_t)id * 4 + source;
}

static inline unsigned vrt_phase_id(uint64_t field)
{
	return (unsigned)(field / 4);
}

static inline unsigned vrt_phase_source(uint64_t field)
{
	return (unsigned)(field % 4);
}

/* Name of a fixed phase id, or NULL. */
static inline const char *vrt_phase_builtin_name(unsigned id)
{
	switch (id) {
#define VRT_X_PNAME(i, name)                                                   \
	case i:                                                                \
		return #name;
		VRT_PHASE_LIST(VRT_X_PNAME)
#undef VRT_X_PNAME
	}
	return NULL;
}

enum vrt_header_flag {
	/* Capture began in standby: the file holds nothing but PAST facts
	 * before its first SNAPSHOT (older writers: 0). */
	VRT_HEADER_STANDBY = 1,
	/* Capture began by `vramtrace attach` into a process that was
	 * running without the preload: what it held before is in the first
	 * SNAPSHOT (the allocations it can name, and the before_attach
	 * remainder), and nothing of its start-up is in the file. */
	VRT_HEADER_ATTACHED = 2,
};

enum vrt_trailer_flag {
	VRT_TRAILER_CLEAN_EXIT = 1,  /* written by the exit path */
	VRT_TRAILER_CAPTURE_OFF = 2, /* capture stopped early (see note) */
};

/* The trailer's exit_kind. */
enum vrt_trailer_exit {
	VRT_TRAILER_EXIT_UNKNOWN = 0, /* not through exit/_exit (an exec's
	                               * shutdown, a stop) */
	VRT_TRAILER_EXIT_CODE = 1,    /* exit_code: the status */
};

enum vrt_vendor { VRT_VENDOR_CUDA = 1, VRT_VENDOR_HIP = 2 };

/* Special device values in event records (svarint "device" fields). */
#define VRT_DEVICE_HOST (-1) /* host memory: pinned, registered */
#define VRT_DEVICE_UNKNOWN                                                     \
	(-2) /* no current context: MAP takes its                              \
	      * handle's device, FREE its allocation's */

/* Memory families. Device families live in VRAM; host families are pinned
 * or registered host memory; VA is reserved address space (not memory). */
enum vrt_family {
	VRT_FAM_DEVICE = 0,     /* cuMemAlloc/Pitch, hipMalloc... */
	VRT_FAM_ASYNC = 1,      /* stream-ordered and pool allocations */
	VRT_FAM_VMM = 2,        /* physical bytes of cuMemCreate handles */
	VRT_FAM_MANAGED = 3,    /* cuMemAllocManaged */
	VRT_FAM_PINNED = 4,     /* host: cuMemHostAlloc, cuMemAllocHost */
	VRT_FAM_REGISTERED = 5, /* host: cuMemHostRegister */
	VRT_FAM_VA = 6,         /* cuMemAddressReserve: address space only */
	VRT_FAM_NONE = 7,       /* probes */
	VRT_FAM_COUNT = 8
};

/* What a call does to the live set. */
enum vrt_op {
	VRT_OP_ALLOC = 0,
	VRT_OP_FREE = 1,
	VRT_OP_MAP = 2,
	VRT_OP_UNMAP = 3,
	VRT_OP_PROBE = 4,
};

/*
 * Every recorded API, once: X(id, name, family, op). Ids are part of the
 * format: never renumber, only append. Frees name the family whose address
 * space they look up; the bytes freed count against the family that made
 * the allocation (cuMemFree_v2 may free a cuMemAllocAsync pointer).
 * Address spaces: DEVICE/ASYNC/MANAGED share device pointers; PINNED,
 * REGISTERED, VA and VMM handles are each their own.
 */
#define VRT_API_LIST(X)                                                        \
	X(1, cuMemAlloc_v2, VRT_FAM_DEVICE, VRT_OP_ALLOC)                      \
	X(2, cuMemAllocPitch_v2, VRT_FAM_DEVICE, VRT_OP_ALLOC)                 \
	X(3, cuMemFree_v2, VRT_FAM_DEVICE, VRT_OP_FREE)                        \
	X(4, cuMemAllocAsync, VRT_FAM_ASYNC, VRT_OP_ALLOC)                     \
	X(5, cuMemAllocAsync_ptsz, VRT_FAM_ASYNC, VRT_OP_ALLOC)                \
	X(6, cuMemAllocFromPoolAsync, VRT_FAM_ASYNC, VRT_OP_ALLOC)             \
	X(7, cuMemAllocFromPoolAsync_ptsz, VRT_FAM_ASYNC, VRT_OP_ALLOC)        \
	X(8, cuMemFreeAsync, VRT_FAM_ASYNC, VRT_OP_FREE)                       \
	X(9, cuMemFreeAsync_ptsz, VRT_FAM_ASYNC, VRT_OP_FREE)                  \
	X(10, cuMemAddressReserve, VRT_FAM_VA, VRT_OP_ALLOC)                   \
	X(11, cuMemAddressFree, VRT_FAM_VA, VRT_OP_FREE)                       \
	X(12, cuMemCreate, VRT_FAM_VMM, VRT_OP_ALLOC)                          \
	X(13, cuMemRelease, VRT_FAM_VMM, VRT_OP_FREE)                          \
	X(14, cuMemMap, VRT_FAM_VMM, VRT_OP_MAP)                               \
	X(15, cuMemUnmap, VRT_FAM_VMM, VRT_OP_UNMAP)                           \
	X(16, cuMemAllocManaged, VRT_FAM_MANAGED, VRT_OP_ALLOC)                \
	X(17, cuMemHostAlloc, VRT_FAM_PINNED, VRT_OP_ALLOC)                    \
	X(18, cuMemAllocHost_v2, VRT_FAM_PINNED, VRT_OP_ALLOC)                 \
	X(19, cuMemFreeHost, VRT_FAM_PINNED, VRT_OP_FREE)                      \
	X(20, cuMemHostRegister_v2, VRT_FAM_REGISTERED, VRT_OP_ALLOC)          \
	X(21, cuMemHostUnregister, VRT_FAM_REGISTERED, VRT_OP_FREE)            \
	X(22, cuMemGetInfo_v2, VRT_FAM_NONE, VRT_OP_PROBE)                     \
	X(64, hipMalloc, VRT_FAM_DEVICE, VRT_OP_ALLOC)                         \
	X(65, hipExtMallocWithFlags, VRT_FAM_DEVICE, VRT_OP_ALLOC)             \
	X(66, hipMallocPitch, VRT_FAM_DEVICE, VRT_OP_ALLOC)                    \
	X(67, hipFree, VRT_FAM_DEVICE, VRT_OP_FREE)                            \
	X(68, hipMallocAsync, VRT_FAM_ASYNC, VRT_OP_ALLOC)                     \
	X(69, hipMallocFromPoolAsync, VRT_FAM_ASYNC, VRT_OP_ALLOC)             \
	X(70, hipFreeAsync, VRT_FAM_ASYNC, VRT_OP_FREE)                        \
	X(71, hipMemAddressReserve, VRT_FAM_VA, VRT_OP_ALLOC)                  \
	X(72, hipMemAddressFree, VRT_FAM_VA, VRT_OP_FREE)                      \
	X(73, hipMemCreate, VRT_FAM_VMM, VRT_OP_ALLOC)                         \
	X(74, hipMemRelease, VRT_FAM_VMM, VRT_OP_FREE)                         \
	X(75, hipMemMap, VRT_FAM_VMM, VRT_OP_MAP)                              \
	X(76, hipMemUnmap, VRT_FAM_VMM, VRT_OP_UNMAP)                          \
	X(77, hipMallocManaged, VRT_FAM_MANAGED, VRT_OP_ALLOC)                 \
	X(78, hipHostMalloc, VRT_FAM_PINNED, VRT_OP_ALLOC)                     \
	X(79, hipMallocHost, VRT_FAM_PINNED, VRT_OP_ALLOC)                     \
	X(80, hipHostFree, VRT_FAM_PINNED, VRT_OP_FREE)                        \
	X(81, hipFreeHost, VRT_FAM_PINNED, VRT_OP_FREE)                        \
	X(82, hipHostRegister, VRT_FAM_REGISTERED, VRT_OP_ALLOC)               \
	X(83, hipHostUnregister, VRT_FAM_REGISTERED, VRT_OP_FREE)              \
	X(84, hipMemGetInfo, VRT_FAM_NONE, VRT_OP_PROBE)

enum vrt_api {
#define VRT_X_ENUM(id, name, fam, op) VRT_API_##name = id,
	VRT_API_LIST(VRT_X_ENUM)
#undef VRT_X_ENUM
	        VRT_API_MAX = 255
};

/* Name of an api id, or NULL when unknown (a newer writer). */
static inline const char *vrt_api_name(unsigned id)
{
	switch (id) {
#define VRT_X_NAME(i, name, fam, op)                                           \
	case i:                                                                \
		return #name;
		VRT_API_LIST(VRT_X_NAME)
#undef VRT_X_NAME
	}
	return NULL;
}

/* Family and op of an api id; return -1 when unknown. */
static inline int vrt_api_family(unsigned id)
{
	switch (id) {
#define VRT_X_FAM(i, name, fam, op)                                            \
	case i:                                                                \
		return fam;
		VRT_API_LIST(VRT_X_FAM)
#undef VRT_X_FAM
	}
	return -1;
}

static inline int vrt_api_op(unsigned id)
{
	switch (id) {
#define VRT_X_OP(i, name, fam, op)                                             \
	case i:                                                                \
		return op;
		VRT_API_LIST(VRT_X_OP)
#undef VRT_X_OP
	}
	return -1;
}

/* Ids below 64 are CUDA driver calls, 64 and up HIP runtime calls. */
static inline int vrt_api_vendor(unsigned id)
{
	return id < 64 ? VRT_VENDOR_CUDA : VRT_VENDOR_HIP;
}

/* ---- varints ----------------------------------------------------------- */

#define VRT_UVARINT_MAX 10

/* Writes v at p (room for VRT_UVARINT_MAX bytes); returns bytes written. */
static inline size_t vrt_put_uvarint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline uint64_t vrt_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t vrt_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline size_t vrt_put_svarint(uint8_t *p, int64_t v)
{
	return vrt_put_uvarint(p, vrt_zigzag(v));
}

/*
 * Packed values (version 3, in ALLOC_C and FREE_C): GPU addresses and sizes
 * are multiples of large powers of two (512 B, 2 MiB), which a plain varint
 * spends whole bytes on. A packed uvarint holds v = m << s (m odd) as the
 * uvarint of m << 6 | s, and 0 as 0; a packed svarint holds v = m << s
 * (m odd, signed) as the uvarint of zigzag(m) << 6 | s. Values whose m (or
 * zigzag(m)) needs more than 58 bits do not pack: a writer writes that
 * event as a full ALLOC or FREE. A reader unpacks any uvarint (bits pushed
 * past bit 63 are lost).
 */
static inline int vrt_pack_u(uint64_t v, uint64_t *out)
{
	if (!v) {
		*out = 0;
		return 1;
	}
	unsigned s = (unsigned)__builtin_ctzll(v);
	uint64_t m = v >> s;
	if (m >> 58)
		return 0;
	*out = m << 6 | s;
	return 1;
}

static inline int vrt_pack_s(int64_t v, uint64_t *out)
{
	if (!v) {
		*out = 0;
		return 1;
	}
	unsigned s = (unsigned)__builtin_ctzll((uint64_t)v);
	uint64_t u = (uint64_t)v >> s;
	if (v < 0) /* arithmetic shift, spelled out */
		u |= ~(UINT64_MAX >> s);
	uint64_t z = vrt_zigzag((int64_t)u);
	if (z >> 58)
		return 0;
	*out = z << 6 | s;
	return 1;
}

static inline uint64_t vrt_unpack_u(uint64_t p)
{
	return (p >> 6) << (p & 63);
}

static inline int64_t vrt_unpack_s(uint64_t p)
{
	return (int64_t)((uint64_t)vrt_unzigzag(p >> 6) << (p & 63));
}

/* Reads a uvarint from [*p, end). On success advances *p and returns 0;
 * returns -1 (and leaves *p alone) when the input ends or the varint is
 * longer than 10 bytes. Never reads past end. */
static inline int vrt_get_uvarint(const uint8_t **p, const uint8_t *end,
                                  uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (q >= end)
			return -1;
		uint8_t b = *q++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*out = v;
			return 0;
		}
	}
	return -1;
}

static inline int vrt_get_svarint(const uint8_t **p, const uint8_t *end,
                                  int64_t *out)
{
	uint64_t u;
	if (vrt_get_uvarint(p, end, &u))
		return -1;
	*out = vrt_unzigzag(u);
	return 0;
}

#endif /* VRAMTRACE_TRACE_FORMAT_H */
