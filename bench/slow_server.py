#!/usr/bin/env python3
"""A delay-injecting HTTP/1.1 file server on 127.0.0.1 for the closure and
advise benchmarks (issue 25): `slow_server.py PORT DIR DELAY_MS [LOG]
[MBPS]`.

Every request is answered DELAY_MS after it is read, as a distant cache or
a CDN miss would answer it: a round trip the client can only hide by having
more requests in flight. Connections are kept alive. It is one asyncio loop
(a waiting request costs no thread), so at thousands of requests a second
the server, not the client, is never what limits a run; files are read once
and kept in memory. With LOG, one line per request is appended there: the
path and the status. With MBPS, each response body is sent at most that
many megabytes a second (per connection, as a distant server's TCP flow
is limited by its round trip).
"""
import asyncio
import os
import sys

PORT, ROOT, DELAY = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]) / 1000.0
LOG = open(sys.argv[4], "a", buffering=1) if len(sys.argv) > 4 and sys.argv[4] else None
RATE = float(sys.argv[5]) * 1e6 if len(sys.argv) > 5 else 0.0
SLICE = 1 << 16
FILES = {}


def body_of(path):
    if path not in FILES:
        full = os.path.normpath(os.path.join(ROOT, path.lstrip("/")))
        if not full.startswith(os.path.normpath(ROOT)) or not os.path.isfile(full):
            return None
        with open(full, "rb") as f:
            FILES[path] = f.read()
    return FILES[path]


async def serve(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            parts = line.decode("latin-1").split()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            path = parts[1].split("?")[0] if len(parts) > 1 else "/"
            await asyncio.sleep(DELAY)
            body = body_of(path)
            if body is None:
                head = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
                body, status = b"", 404
            else:
                head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
                status = 200
            writer.write(head)
            if RATE:
                for i in range(0, len(body), SLICE):
                    writer.write(body[i : i + SLICE])
                    await writer.drain()
                    await asyncio.sleep(min(SLICE, len(body) - i) / RATE)
            else:
                writer.write(body)
            await writer.drain()
            if LOG:
                LOG.write(f"{path} {status}\n")
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT, backlog=1024)
    async with server:
        await server.serve_forever()


asyncio.run(main())
