#!/usr/bin/env python3
"""run_h2_frames.py — the example servers' own HTTP/2 frames and HPACK
(examples/sim_h2.c) checked by Debian's python3-h2, which refuses a
malformed frame, a bad header block or a protocol violation:

- h2 as the client of a gRPC shard (serve_sim --protocol grpc --uds, the
  fake GPU): a Warmup call, then a Prefill call; both must end with
  grpc-status 0, every frame the server wrote accepted;
- h2 as the server of the TGI-shaped router (tgi_sim --router): its
  Warmup and Prefill calls must be read as gRPC requests.

Exit 77 (skipped) where no python3 here has h2.
"""
import os
import socket
import subprocess
import sys
import threading
import time

try:
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
except ImportError:
    if os.path.exists("/usr/bin/python3") and \
            os.path.realpath(sys.executable) != "/usr/bin/python3" and \
            not os.environ.get("VRT_WIRE_REEXEC"):
        os.environ["VRT_WIRE_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("skip: python3-h2 is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, options, poll, scratch  # noqa: E402

GRPC_HDR = [("content-type", "application/grpc"), ("te", "trailers")]


def call(conn, sock, sid, path):
    """One unary gRPC call on stream sid; its grpc-status (None: no
    trailers)."""
    conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"),
                            (":path", path), (":authority", "shard")] +
                      GRPC_HDR)
    conn.send_data(sid, b"\x00\x00\x00\x00\x02hi", end_stream=True)
    sock.sendall(conn.data_to_send())
    status, ended = None, False
    while not ended:
        data = sock.recv(65536)
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.TrailersReceived) and \
                    ev.stream_id == sid:
                status = dict(ev.headers).get(b"grpc-status")
            if isinstance(ev, h2.events.StreamEnded) and \
                    ev.stream_id == sid:
                ended = True
            if isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length,
                                               ev.stream_id)
        sock.sendall(conn.data_to_send())
    return status


def shard_case(args, tmp):
    path = os.path.join(tmp, "shard-0")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.fake_dir + ":" + env.get(
        "LD_LIBRARY_PATH", "")
    env.setdefault("FAKECUDA_MEM", "80G")
    p = subprocess.Popen([os.path.join(args.bin_dir, "serve_sim"), "serve",
                          "m", "--protocol", "grpc", "--uds", path,
                          "--warmup-rpc", "--request-steps", "1"],
                         env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        poll(lambda: os.path.exists(path))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(path)
        conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        s.sendall(conn.data_to_send())
        err = None
        try:
            w = call(conn, s, 1, "/generate.v2.TextGenerationService/Warmup")
            r = call(conn, s, 3, "/generate.v2.TextGenerationService/Prefill")
        except h2.exceptions.ProtocolError as e:
            err, w, r = e, None, None
        s.close()
        check(err is None, f"shard: h2 accepts every frame the server "
                           f"wrote ({err})")
        check(w == b"0" and r == b"0",
              f"shard: Warmup and Prefill end with grpc-status 0 "
              f"({w}, {r})")
        rc = p.wait(timeout=60)
        check(rc == 0, f"shard: served its plan and exited 0 ({rc})")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def router_case(args, tmp):
    path = os.path.join(tmp, "fake-shard")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    srv.settimeout(60)
    seen, errors = [], []

    def serve_one(c):
        conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False))
        conn.initiate_connection()
        c.sendall(conn.data_to_send())
        paths = {}
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    return
                for ev in conn.receive_data(data):
                    if isinstance(ev, h2.events.RequestReceived):
                        paths[ev.stream_id] = dict(ev.headers)[b":path"]
                    if isinstance(ev, h2.events.StreamEnded):
                        sid = ev.stream_id
                        seen.append(paths.get(sid))
                        conn.send_headers(sid, [(":status", "200")] +
                                          GRPC_HDR[:1])
                        conn.send_data(sid, b"\x00\x00\x00\x00\x02ok")
                        conn.send_headers(sid, [("grpc-status", "0")],
                                          end_stream=True)
                c.sendall(conn.data_to_send())
        except h2.exceptions.ProtocolError as e:
            errors.append(e)
        except OSError:
            pass  # the client closed after its answer
        finally:
            c.close()

    def accept_loop():
        try:
            while True:
                c, _ = srv.accept()
                threading.Thread(target=serve_one, args=(c,),
                                 daemon=True).start()
        except OSError:
            return

    threading.Thread(target=accept_loop, daemon=True).start()
    p = subprocess.run([os.path.join(args.bin_dir, "tgi_sim"), "--router",
                        path, "1"], capture_output=True, text=True,
                       timeout=60)
    time.sleep(0.1)
    srv.close()
    check(not errors, f"router: h2 accepts every frame the client wrote "
                      f"({errors})")
    check(p.returncode == 0 and
          b"/generate.v2.TextGenerationService/Warmup" in seen and
          b"/generate.v2.TextGenerationService/Prefill" in seen,
          f"router: its Warmup and Prefill calls read as gRPC requests "
          f"(exit {p.returncode}, {seen})")


def main():
    ap = options("--fake-dir", "--bin-dir", "--tmp-root")
    args = ap.parse_args()

    def body(tmp):
        shard_case(args, tmp)
        router_case(args, tmp)

    return scratch(args, "h2-", body)


if __name__ == "__main__":
    sys.exit(main())
