#!/usr/bin/env python3
"""run_conn_wire.py — the connection state machine (preload/conn.c, h2.c)
fed with bytes written by real protocol libraries: Python's h2 (Debian's
python3-h2) plays gRPC clients and servers, so the HPACK it reads is a
real encoder's (Huffman-coded paths, dynamic-table indexes for repeats),
and the frames are split at every byte boundary and at random ones;
Python's ssl (OpenSSL) makes real TLS 1.2 and 1.3 handshakes and records,
whose requests are inferred by turns; a protocol of its own is too.
TAP output; exit 77 (skipped) when no python3 here has h2.

    run_conn_wire.py CONN_FEED
"""
import os
import random
import shutil
import ssl
import subprocess
import sys
import tempfile

try:
    import h2.config
    import h2.connection
    import hpack
    from hyperframe.frame import HeadersFrame
except ImportError:
    # The build's python3 may not be the system's, which has the package.
    if os.path.exists("/usr/bin/python3") and \
            os.path.realpath(sys.executable) != "/usr/bin/python3" and \
            not os.environ.get("VRT_WIRE_REEXEC"):
        os.environ["VRT_WIRE_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("1..0 # SKIP python3-h2 is not installed")
    sys.exit(77)

FEED = sys.argv[1]
n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    print(("ok %d - " if cond else "not ok %d - ") % n + what, flush=True)
    if not cond:
        failed += 1


def run(script):
    out = subprocess.run([FEED], input=script, capture_output=True,
                         text=True, timeout=60).stdout
    events = []
    for line in out.splitlines():
        if line.startswith("inflight "):
            events.append(("inflight", int(line.split()[1])))
            continue
        op, rest = line.split(" ", 1)
        kv = dict(p.split("=", 1) for p in rest.split(" ")[:4])
        path = rest.split(" path=", 1)[1]
        events.append((op, int(kv["stream"]), int(kv["flags"]),
                       int(kv["arg"]), None if path == "-" else path,
                       int(kv["val"])))
    return events


def script(chunks, split):
    """chunks: (op, bytes); split: 'whole', 'bytes' or a Random."""
    lines, t = [], 1000
    for op, data in chunks:
        t += 1000
        if op == "C":
            lines.append(f"C {t}")
            continue
        if split == "whole":
            pieces = [data]
        elif split == "bytes":
            pieces = [data[i:i + 1] for i in range(len(data))]
        else:
            pieces, i = [], 0
            while i < len(data):
                k = split.randint(1, 40)
                pieces.append(data[i:i + k])
                i += k
        for p in pieces:
            lines.append(f"{op} {t} {p.hex()}")
    return "\n".join(lines) + "\n"


def pair():
    c = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=True))
    s = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=False))
    return c, s


def pump(src, dst):
    data = src.data_to_send()
    if data:
        dst.receive_data(data)
    return data


GRPC = "/inference.GRPCInferenceService/ModelInfer"
HEALTH = "/grpc.health.v1.Health/Check"


def req_headers(path):
    return [(":method", "POST"), (":scheme", "http"), (":path", path),
            (":authority", "127.0.0.1:8001"),
            ("content-type", "application/grpc"), ("te", "trailers")]


def grpc_conversation():
    """Four ModelInfer calls at once and a health check on one connection,
    answered (unary, server-streaming), one cancelled, the last refused
    by a GOAWAY."""
    c, s = pair()
    chunks = []
    c.initiate_connection()
    chunks.append(("R", pump(c, s)))
    s.initiate_connection()
    chunks.append(("W", pump(s, c)))
    chunks.append(("R", pump(c, s)))  # the client's SETTINGS ack
    for sid, path in ((1, GRPC), (3, GRPC), (5, HEALTH), (7, GRPC),
                      (9, GRPC)):
        c.send_headers(sid, req_headers(path))
        c.send_data(sid, b"\x00\x00\x00\x00\x05hello", end_stream=True)
    chunks.append(("R", pump(c, s)))
    # unary answer on 1: headers, message, trailers
    s.send_headers(1, [(":status", "200"),
                       ("content-type", "application/grpc")])
    s.send_data(1, b"\x00\x00\x00\x00\x02ok")
    s.send_headers(1, [("grpc-status", "0")], end_stream=True)
    # the health check
    s.send_headers(5, [(":status", "200"),
                       ("content-type", "application/grpc")])
    s.send_data(5, b"\x00\x00\x00\x00\x02\x08\x01")
    s.send_headers(5, [("grpc-status", "0")], end_stream=True)
    chunks.append(("W", pump(s, c)))
    # server-streaming on 3: many messages, then trailers
    s.send_headers(3, [(":status", "200"),
                       ("content-type", "application/grpc")])
    for _ in range(5):
        s.send_data(3, b"\x00\x00\x00\x00\x03tok")
    chunks.append(("W", pump(s, c)))
    s.send_headers(3, [("grpc-status", "0")], end_stream=True)
    chunks.append(("W", pump(s, c)))
    # the client cancels 7
    c.reset_stream(7)
    chunks.append(("R", pump(c, s)))
    # the server refuses what it did not process (9)
    s.close_connection(last_stream_id=7)
    chunks.append(("W", pump(s, c)))
    return chunks


def check_grpc(events, how):
    begins = [e for e in events if e[0] == "BEGIN"]
    ends = [e for e in events if e[0] == "END"]
    ok([e[1] for e in begins] == [1, 3, 5, 7, 9],
       f"{how}: five streams begin in order ({[e[1] for e in begins]})")
    calls = [e for e in begins if e[1] != 5]
    ok(calls and calls[0][4] == GRPC and calls[0][5] != 0 and
       all(e[5] == calls[0][5] and e[4] in (GRPC, None) for e in calls),
       f"{how}: the first ModelInfer call's :path is read, the repeats "
       f"(dynamic-table indexes) known by its hash "
       f"({[(e[4], e[5]) for e in begins]})")
    ok([e[2] for e in begins if e[1] == 5] == [1],
       f"{how}: the health check is a probe")
    ok([(e[1], e[3]) for e in ends] == [(1, 200), (5, 200), (3, 200),
                                       (7, 0), (9, 0)],
       f"{how}: ends: trailers, trailers, stream's trailers, the "
       f"client's reset, the GOAWAY's refusal "
       f"({[(e[1], e[3]) for e in ends]})")
    protos = [e for e in events if e[0] == "PROTO"]
    ok(len(protos) == 1 and protos[0][3] == 1 and protos[0][2] == 16,
       f"{how}: one PROTO HTTP/2, followed")
    ok(events[-1] == ("inflight", 0), f"{how}: nothing left in flight")


def padded_continuation():
    """A HEADERS frame with padding and priority, and a header block too
    large for one frame (CONTINUATION), on a fresh connection."""
    c, s = pair()
    chunks = []
    c.initiate_connection()
    chunks.append(("R", pump(c, s)))
    enc = hpack.Encoder()
    block = enc.encode(req_headers("/generate.v2.TextGenerationService/"
                                   "Prefill"))
    f = HeadersFrame(1, data=block, flags=["END_HEADERS", "PADDED",
                                            "PRIORITY"])
    f.pad_length = 7
    f.depends_on = 0
    f.stream_weight = 15
    chunks.append(("R", f.serialize()))
    big = enc.encode(req_headers(GRPC) + [("x-big", "v" * 40000)])
    h1 = HeadersFrame(3, data=big[:16000], flags=[])
    from hyperframe.frame import ContinuationFrame
    h2f = ContinuationFrame(3, data=big[16000:32000], flags=[])
    h3 = ContinuationFrame(3, data=big[32000:], flags=["END_HEADERS"])
    chunks.append(("R", h1.serialize() + h2f.serialize() +
                   h3.serialize()))
    chunks.append(("C", b""))
    return chunks


def h2c_upgrade():
    """HTTP/1.1 Upgrade: h2c; the request that asked is stream 1."""
    chunks = [("R", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                    b"Connection: Upgrade, HTTP2-Settings\r\n"
                    b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"
                    b"\r\nContent-Length: 0\r\n\r\n")]
    s = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=False))
    s.initiate_upgrade_connection()
    s.send_headers(1, [(":status", "200")])
    s.send_data(1, b"done", end_stream=True)
    chunks.append(("W", b"HTTP/1.1 101 Switching Protocols\r\n"
                        b"Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n" +
                   s.data_to_send()))
    c = h2.connection.H2Connection(
        h2.config.H2Configuration(client_side=True))
    c.initiate_upgrade_connection()
    c.send_headers(3, req_headers(GRPC), end_stream=True)
    chunks.append(("R", c.data_to_send()))
    return chunks


def tls_session(version, cert, key):
    """A TLS connection: handshake, then three requests in turn (the
    second answered in two writes), as (op, bytes) chunks, times apart."""
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert, key)
    sctx.minimum_version = sctx.maximum_version = version
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.check_hostname = False
    cctx.verify_mode = ssl.CERT_NONE
    cctx.minimum_version = cctx.maximum_version = version
    ci, co, si, so = (ssl.MemoryBIO() for _ in range(4))
    c = cctx.wrap_bio(ci, co, server_side=False)
    s = sctx.wrap_bio(si, so, server_side=True)
    chunks = []

    def c2s():
        data = co.read()
        if data:
            si.write(data)
            chunks.append(("R", data))

    def s2c():
        data = so.read()
        if data:
            ci.write(data)
            chunks.append(("W", data))

    for _ in range(10):
        for end in (c, s):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
        c2s()
        s2c()
        try:
            c.do_handshake()
            s.do_handshake()
            break
        except ssl.SSLWantReadError:
            continue
    # let the server's post-handshake flight (tickets) go out
    try:
        s.read(1)
    except ssl.SSLWantReadError:
        pass
    s2c()
    for i, parts in enumerate((1, 2, 1)):
        c.write(b"GENERATE %d tokens please" % i)
        c2s()
        try:
            s.read(100)
        except ssl.SSLWantReadError:
            pass
        for k in range(parts):
            s.write(b"answer part %d" % k)
            s2c()
    chunks.append(("C", b""))
    return chunks


def tls_cases():
    if not shutil.which("openssl"):
        print("# no openssl command: TLS cases skipped")
        return
    d = tempfile.mkdtemp()
    cert, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                    "-subj", "/CN=127.0.0.1"], check=True,
                   capture_output=True)
    for name, v in (("TLS 1.3", ssl.TLSVersion.TLSv1_3),
                    ("TLS 1.2", ssl.TLSVersion.TLSv1_2)):
        ev = run(script(tls_session(v, cert, key), random.Random(5)))
        begins = [e for e in ev if e[0] == "BEGIN"]
        ends = [e for e in ev if e[0] == "END"]
        ok(len(begins) == 3 and all(e[2] == 2 for e in begins),
           f"{name}: three requests inferred, the handshake none "
           f"({len(begins)})")
        ok(len(ends) == 3 and ev[-1] == ("inflight", 0),
           f"{name}: each ends (the next turn, the close)")
    shutil.rmtree(d)


def raw_protocol():
    """A protocol of its own: a request, an answer in three writes, the
    next request after a pause, a close while a request waits."""
    return [("R", b"\x01\x00\x10req-one"), ("W", b"\x02part1"),
            ("W", b"\x02part2"), ("W", b"\x03end"),
            ("R", b"\x01\x00\x10req-two"), ("R", b"more bytes"),
            ("W", b"\x03end"), ("R", b"\x01\x00\x10req-three"),
            ("C", b"")]


def sendfile_payload():
    """A DATA frame whose header is written and whose payload goes out
    unseen in one piece (sendfile of exactly the rest of the frame), then
    the trailers: the frames are followed on. Returns script text."""
    c, s = pair()
    c.initiate_connection()
    lines = [f"R 1000 {pump(c, s).hex()}"]
    s.initiate_connection()
    lines.append(f"W 2000 {pump(s, c).hex()}")
    c.send_headers(1, req_headers(GRPC), end_stream=True)
    lines.append(f"R 3000 {pump(c, s).hex()}")
    s.send_headers(1, [(":status", "200"),
                       ("content-type", "application/grpc")])
    lines.append(f"W 4000 {pump(s, c).hex()}")
    s.send_data(1, b"\x00\x00\x00\x00\x0bpayload-big")
    frame = pump(s, c)
    lines.append(f"W 5000 {frame[:9].hex()}")
    lines.append(f"U 5000 {len(frame) - 9}")
    s.send_headers(1, [("grpc-status", "0")], end_stream=True)
    lines.append(f"W 6000 {pump(s, c).hex()}")
    return "\n".join(lines) + "\n"


def long_path_both_ways():
    """One path of 77 bytes (longer than the text the trace keeps) asked
    over HTTP/1.1 and over HTTP/2: the same identity (val) both ways."""
    path = "/v1/models/" + "m" * 50 + "/completions?x=1"
    h1 = (f"POST {path} HTTP/1.1\r\nHost: x\r\n"
          f"Content-Length: 0\r\n\r\n").encode()
    ev1 = run(f"R 1000 {h1.hex()}\n")
    c, s = pair()
    c.initiate_connection()
    lines = [f"R 1000 {pump(c, s).hex()}"]
    c.send_headers(1, req_headers(path), end_stream=True)
    lines.append(f"R 2000 {pump(c, s).hex()}")
    ev2 = run("\n".join(lines) + "\n")
    b1 = [e[5] for e in ev1 if e[0] == "BEGIN"]
    b2 = [e[5] for e in ev2 if e[0] == "BEGIN"]
    return len(path), b1, b2


def main():
    tls_cases()
    plen, b1, b2 = long_path_both_ways()
    ok(plen > 64 and len(b1) == 1 and b1 == b2,
       f"a {plen}-byte path: one identity over HTTP/1.1 and HTTP/2 "
       f"({b1} {b2})")
    ev = run(sendfile_payload())
    ok([(e[0], e[1]) for e in ev if e[0] in ("BEGIN", "END")] ==
       [("BEGIN", 1), ("END", 1)] and ev[-1] == ("inflight", 0),
       f"HTTP/2: a payload sent unseen to the frame's end, then trailers: "
       f"the stream ends ({ev})")
    ev = run(script(raw_protocol(), "whole"))
    ops = [(e[0], e[2]) for e in ev if e[0] != "inflight"]
    ok(ops == [("PROTO", 16), ("BEGIN", 2), ("ANSWER", 2), ("END", 2),
               ("BEGIN", 2), ("ANSWER", 2), ("END", 2), ("BEGIN", 2),
               ("END", 2)],
       f"raw protocol: requests by turns, answers marked, a close ends "
       f"the one waiting ({ops})")
    ends = [e for e in ev if e[0] == "END"]
    ok([e[5] for e in ends] == [1000, 1000, 0],
       f"raw protocol: an end says how long ago the answer's last write "
       f"was ({[e[5] for e in ends]})")
    for how in ("whole", "bytes", "random"):
        split = random.Random(7) if how == "random" else how
        check_grpc(run(script(grpc_conversation(), split)), how)
    ev = run(script(padded_continuation(), random.Random(3)))
    begins = [e for e in ev if e[0] == "BEGIN"]
    ok([(e[1], e[4]) for e in begins] ==
       [(1, "/generate.v2.TextGenerationService/Prefill"), (3, GRPC)],
       f"padding, priority and CONTINUATION: both paths read ({begins})")
    ok(ev[-1] == ("inflight", 0), "a close ends every stream")
    ev = run(script(h2c_upgrade(), "whole"))
    ops = [(e[0], e[1], e[3]) for e in ev if e[0] not in ("inflight",)]
    ok(ops[:1] == [("BEGIN", 0, 0)] and ("END", 0, 101) in ops and
       ("BEGIN", 1, 0) in ops and ("END", 1, 200) in ops and
       ("BEGIN", 3, 0) in ops,
       f"h2c: the HTTP/1.1 request goes on as stream 1, then streams "
       f"({ops})")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
