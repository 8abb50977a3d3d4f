#!/usr/bin/env python3
"""The sending end of the softirq scenario's TCP stream (`rtwhy selftest --stream-from`).

Run it on another machine (or, for the project's QEMU guest, on the host: the guest
reaches the host's 127.0.0.1 as 10.0.2.2 through QEMU's user-mode network):

    scripts/stream-source.py [--bind ADDR] [--port PORT] [--for SECONDS]

Every connection gets zeros as fast as the network takes them until the client closes.
Prints the port it listens on (useful with --port 0, the default: a free one) on its
first line of stdout, and exits by itself after --for seconds (default 1800) so that a
forgotten one does not run for ever. Python's standard library only.
"""

import argparse
import socket
import sys
import threading
import time


def send_zeros(conn: socket.socket) -> None:
    chunk = bytes(1 << 16)
    try:
        while True:
            conn.sendall(chunk)
    except OSError:
        pass  # the client went away: the normal end
    finally:
        conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bind", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")
    ap.add_argument("--for", dest="seconds", type=float, default=1800.0,
                    help="exit after this many seconds (default 1800)")
    args = ap.parse_args()
    if not 0 <= args.port <= 65535 or args.seconds <= 0:
        print("stream-source: --port must be 0-65535 and --for positive", file=sys.stderr)
        return 2
    try:
        server = socket.create_server((args.bind, args.port), backlog=8)
    except OSError as e:
        print(f"stream-source: cannot listen on {args.bind}:{args.port}: {e}", file=sys.stderr)
        return 1
    print(server.getsockname()[1], flush=True)
    deadline = time.monotonic() + args.seconds
    server.settimeout(1.0)  # accept wakes up to see the deadline
    while time.monotonic() < deadline:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            continue
        conn.settimeout(None)
        # Daemon threads: a connection still open at the deadline ends with the process.
        threading.Thread(target=send_zeros, args=(conn,), daemon=True).start()
    return 0

if __name__ == "__main__":
    sys.exit(main())
