#!/usr/bin/env python3
"""Test hosts for the egress tests, run inside the test's "hosts" network
namespace: a package registry over HTTP (port 80) and HTTPS (443), a raw
TCP CONNECT target, and a DNS server mapping names to addresses (one name
answers a public address first and a private one afterwards: rebinding).
Every request is logged, one JSON line each, so tests can see what reached
a host.

    egress_hosts.py --ip A --ip2 B --dns-ip C --cert F --key F --log F \
                    --map name=addr ... --rebind name=first,then
"""
import argparse
import json
import os
import subprocess
import socket
import socketserver
import ssl
import struct
import threading
import http.server

ap = argparse.ArgumentParser()
ap.add_argument("--ip", required=True)
ap.add_argument("--ip2", required=True)
ap.add_argument("--dns-ip", required=True)
ap.add_argument("--cert", required=True)
ap.add_argument("--key", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--map", action="append", default=[])
ap.add_argument("--rebind", action="append", default=[])
ap.add_argument("--token", default=None,
                help="/private/... requires Authorization: Bearer TOKEN; "
                     "the log then says whether it matched, never the value")
ap.add_argument("--git-root", default=None,
                help="/private/git/... is git http-backend over this directory "
                     "(behind the token)")
args = ap.parse_args()

lock = threading.Lock()


def log(**kw):
    with lock, open(args.log, "a") as f:
        f.write(json.dumps(kw) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True      # head and body are two writes

    def log_message(self, *a):
        pass

    def read_body(self):
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        scheme = "https" if isinstance(self.connection, ssl.SSLSocket) else "http"
        headers = {k.lower(): v for k, v in self.headers.items()}
        if args.token is not None and "authorization" in headers:
            headers["authorization"] = ("token-ok" if headers["authorization"]
                                        == "Bearer " + args.token
                                        else "token-mismatch")
        body_in = self.read_body() if self.command == "POST" else b""
        log(kind=scheme, host=self.headers.get("Host"), path=self.path,
            method=self.command, headers=headers, body_len=len(body_in))
        if self.path.startswith("/private") and args.token is not None:
            ok = self.headers.get("Authorization") == "Bearer " + args.token
            if ok and args.git_root and self.path.startswith("/private/git/"):
                return self.git_backend(body_in)
            if ok and self.path.startswith("/private/redirect"):
                body = b"moved\n"
                self.send_response(302)
                self.send_header("Location",
                                 "https://registry.example.test/after-redirect")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            body = (("private-ok %s %d\n" % (self.path, len(body_in))).encode()
                    if ok else b"private: token required\n")
            self.send_response(200 if ok else 401)
        elif self.path.startswith("/redirect"):
            body = b"moved\n"
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:9/")
        elif self.path.startswith("/big"):
            body = b"x" * 200000
            self.send_response(200)
        else:
            body = ("registry-ok %s %s %s\n" % (scheme, self.headers.get("Host"),
                                               self.path)).encode()
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def git_backend(self, body_in):
        path, _, query = self.path[len("/private/git"):].partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": args.git_root, "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path, "QUERY_STRING": query,
            "REQUEST_METHOD": self.command, "REMOTE_USER": "agent",
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body_in)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        p = subprocess.run(["git", "http-backend"], input=body_in, env=env,
                           capture_output=True)
        head, _, body = p.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.split(b"\r\n"):
            k, _, v = line.decode("latin-1").partition(":")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k and k.lower() != "content-length":
                headers.append((k, v.strip()))
        log(kind="git", path=self.path, status=status)
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class KeepAlive(Handler):
    """A server that ignores Connection: close and serves every request
    it reads on a connection (as some do): what a second request relayed
    after the first would reach."""

    def do_GET(self):
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        log(kind="http-ka", host=self.headers.get("Host"), path=self.path,
            body=data.decode("latin-1"))
        body = ("ka-ok %s %s\n" % (self.headers.get("Host"), self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = False

    do_POST = do_GET


class TS(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve_http():
    TS((args.ip, 80), Handler).serve_forever()


def serve_keepalive():
    TS((args.ip, 8080), KeepAlive).serve_forever()


def serve_https():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    srv = TS((args.ip, 443), Handler)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        log(kind="tcp", port=self.server.server_address[1])
        self.request.sendall(b"target-hello\n")
        data = self.request.recv(1024)
        self.request.sendall(b"echo:" + data)


class TCPS(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve_tcp(port):
    TCPS((args.ip2, port), Echo).serve_forever()


names = {}
for m in args.map:
    n, a = m.split("=", 1)
    names.setdefault(n.lower(), []).append(a)
rebind = {}
for r in args.rebind:
    n, a = r.split("=", 1)
    first, then = a.split(",")
    rebind[n.lower()] = [first, then, 0]


def dns_answer(q):
    qid, flags = struct.unpack("!HH", q[:4])
    off = 12
    labels = []
    while q[off]:
        l = q[off]
        labels.append(q[off + 1:off + 1 + l].decode())
        off += 1 + l
    off += 1
    qtype, qclass = struct.unpack("!HH", q[off:off + 4])
    question = q[12:off + 4]
    name = ".".join(labels).lower()
    addrs = []
    if name in rebind:
        r = rebind[name]
        addrs = [r[0] if r[2] == 0 else r[1]]
        if qtype == 1:
            r[2] += 1
    else:
        addrs = names.get(name, [])
    log(kind="dns", name=name, qtype=qtype)
    answers = b""
    count = 0
    for a in addrs:
        if ":" in a and qtype == 28:
            rdata = socket.inet_pton(socket.AF_INET6, a)
            answers += struct.pack("!HHHIH", 0xC00C, 28, 1, 0, 16) + rdata
            count += 1
        elif ":" not in a and qtype == 1:
            rdata = socket.inet_aton(a)
            answers += struct.pack("!HHHIH", 0xC00C, 1, 1, 0, 4) + rdata
            count += 1
    rcode = 0 if (name in names or name in rebind) else 3
    hdr = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, count, 0, 0)
    return hdr + question + answers


def serve_dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((args.dns_ip, 53))
    while True:
        q, peer = s.recvfrom(2048)
        try:
            s.sendto(dns_answer(q), peer)
        except Exception as e:  # a malformed query: no answer
            log(kind="dns-error", error=str(e))


for fn in (serve_http, serve_https, serve_dns):
    threading.Thread(target=fn, daemon=True).start()
threading.Thread(target=serve_tcp, args=(7000,), daemon=True).start()
threading.Thread(target=serve_keepalive, daemon=True).start()
threading.Thread(target=serve_tcp, args=(443,), daemon=True).start()
log(kind="ready")
threading.Event().wait()
