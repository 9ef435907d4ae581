"""The machinery of scripts/bench: the helper's and the API's clients,
the stack (helper, Redis, two nginx), and the tools the sections share
(wrk, hyperfine, timing, statistics).  Figures only: nothing here judges
a number."""

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build")
TENANT = "bench"


def die(msg):
    print("bench: " + msg, file=sys.stderr)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summary(times):
    """times in seconds -> dict in milliseconds."""
    ms = [t * 1000.0 for t in times]
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 3),
            "p99_ms": round(pct(ms, 99), 3),
            "mean_ms": round(statistics.fmean(ms), 3)}


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // (1024 * 1024)
    return "%d cores (%s), %d GiB, %s" % (os.cpu_count(), cpu, mem,
                                          os.uname().release)


def need_tools(only):
    tools = ["wrk", "hyperfine", "bwrap", "runc", "nginx", "redis-server",
             "openssl", "perl", "pgrep"]
    if "profiles" in only:
        tools.append("umoci")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        die("missing %s: run scripts/install-deps.sh bench test"
            % ", ".join(missing))
    if subprocess.run(["perl", "-MCrypt::JWT", "-e", "1"],
                      stderr=subprocess.DEVNULL).returncode != 0:
        die("Crypt::JWT missing: run scripts/install-deps.sh runtime")


def build():
    run(["make", "-s", "-C", ROOT, "BUILD=" + BUILD])
    if not os.path.exists(os.path.join(
            ROOT, "build-module/ngx_veto_sandbox_module.so")):
        run(["bash", os.path.join(ROOT, "scripts/build-module.sh")],
            stdout=subprocess.DEVNULL)


def row(what, value, ratio="", **data):
    r = {"what": what, "value": value, "ratio": ratio}
    r.update(data)
    return r


def ratio(x, base):
    return "%.2fx" % (x / base) if base else ""


def fmt_row(r):
    return "  %-58s %14s  %s" % (r["what"], r["value"], r.get("ratio", ""))


def table(rows):
    out = ["| what | result | ratio |", "|---|---|---|"]
    for r in rows:
        out.append("| %s | %s | %s |" % (r["what"], r["value"],
                                         r.get("ratio", "")))
    return "\n".join(out)


def meminfo():
    m = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":")
            m[k] = int(v.split()[0])
    return m


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def timed(fn, n, warmup=2):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return ts


def parallel(n, fn):
    """Runs fn(i) for i in range(n) on n threads at once; wall seconds."""
    barrier = threading.Barrier(n + 1)
    errors = []

    def one(i):
        barrier.wait()
        try:
            fn(i)
        except Exception as e:      # reported, and the run fails
            errors.append(repr(e))

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        die("%d of %d failed, first: %s" % (len(errors), n, errors[0]))
    return wall


def hyperfine(st, cmds, runs, warmup=3):
    """{name: [seconds, ...]} for each (name, argv string), hyperfine -N."""
    out = st.path("hyperfine.json")
    args = ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup),
            "--runs", str(runs), "--export-json", out]
    for name, cmd in cmds:
        args += ["-n", name, cmd]
    run(args, stdout=subprocess.DEVNULL)
    with open(out) as f:
        res = json.load(f)["results"]
    return {r["command"]: r["times"] for r in res}


def wrk(url, secs, conns, header=None, allow_non2xx=False):
    args = ["wrk", "-t2", "-c%d" % conns, "-d%ds" % secs, "--latency"]
    if header:
        args += ["-H", header]
    out = run(args + [url], stdout=subprocess.PIPE).stdout.decode()
    rps = errors = None
    non2xx = 0
    for line in out.splitlines():
        w = line.split()
        if line.startswith("Requests/sec:"):
            rps = float(w[1])
        elif "Non-2xx or 3xx responses:" in line:
            non2xx = int(w[-1])
        elif line.strip().startswith("Socket errors:"):
            errors = line.strip()
    if rps is None:
        die("wrk gave no figure for %s:\n%s" % (url, out))
    if non2xx and not allow_non2xx:
        die("%d non-2xx answers from %s" % (non2xx, url))
    # socket errors (wrk's 2 s timeouts on a busy machine) are a figure,
    # kept with the result, not a failure to run
    return {"rps": rps, "non2xx": non2xx, "errors": errors}


def status_of(url, token=None):
    c = http.client.HTTPConnection("127.0.0.1", int(url.split(":")[2]
                                                   .split("/")[0]))
    c.request("GET", "/" + url.split("/", 3)[3],
              headers={"Authorization": "Bearer " + token} if token else {})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def bwrap_argv(prog):
    return ["bwrap", "--unshare-all", "--die-with-parent",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64",
            "/lib64", "--symlink", "usr/sbin", "/sbin", "--proc", "/proc",
            "--dev", "/dev", "--tmpfs", "/tmp"] + prog


def runc_bundle(st):
    """A bundle equivalent to the sandbox: read-only root, /usr read-only
    from the host, fresh pid, net, ipc, uts, mount namespaces."""
    b = st.path("runc-bundle")
    os.makedirs(b + "/rootfs")
    for d in ("usr", "proc", "dev", "tmp", "sys"):
        os.makedirs(b + "/rootfs/" + d)
    for l in ("bin", "lib", "lib64", "sbin"):
        os.symlink("usr/" + l, b + "/rootfs/" + l)
    run(["runc", "spec", "-b", b])
    with open(b + "/config.json") as f:
        spec = json.load(f)
    spec["process"]["terminal"] = False
    spec["process"]["args"] = ["/usr/bin/true"]
    spec["root"] = {"path": "rootfs", "readonly": True}
    spec["mounts"].append({"destination": "/usr", "type": "bind",
                           "source": "/usr", "options": ["rbind", "ro"]})
    with open(b + "/config.json", "w") as f:
        json.dump(spec, f)
    return ["runc", "--root", st.path("runc-state"), "run", "-b", b,
            "veto-bench-runc-%d" % os.getpid()]


class Helper:
    """The helper protocol: a 12-byte prefix ("VSB1", JSON length, payload
    length, big endian), then the JSON header and the payload.  One
    persistent connection, one request at a time."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)

    def close(self):
        self.s.close()

    def _recv(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("helper closed the connection")
            buf += chunk
        return bytes(buf)

    def call(self, req, payload=b""):
        j = json.dumps(req, separators=(",", ":")).encode()
        self.s.sendall(b"VSB1" + struct.pack(">II", len(j), len(payload))
                       + j + payload)
        head = self._recv(12)
        if head[:4] != b"VSB1":
            raise ConnectionError("bad frame from the helper")
        jl, pl = struct.unpack(">II", head[4:])
        reply = json.loads(self._recv(jl))
        if pl:
            self._recv(pl)
        return reply

    def ok(self, req, payload=b""):
        r = self.call(req, payload)
        if not r.get("ok"):
            raise RuntimeError("helper refused %s: %s" % (req.get("op"), r))
        return r

    def create(self, agent="bench", **extra):
        req = {"op": "create", "tenant": TENANT, "agent": agent}
        req.update(extra)
        return self.ok(req)["sandbox"]["id"]

    def exec(self, sid, argv, agent="bench", **extra):
        req = {"op": "exec", "tenant": TENANT, "agent": agent, "id": sid,
               "argv": argv}
        req.update(extra)
        return self.ok(req)

    def destroy(self, sid, agent="bench"):
        return self.ok({"op": "destroy", "tenant": TENANT, "agent": agent,
                        "id": sid})


class Api:
    """The HTTP API over one keep-alive connection."""

    def __init__(self, port, token, timeout=120):
        self.c = http.client.HTTPConnection("127.0.0.1", port,
                                            timeout=timeout)
        self.h = {"Authorization": "Bearer " + token,
                  "Content-Type": "application/json"}

    def close(self):
        self.c.close()

    def req(self, method, path, body=None, want=(200,)):
        self.c.request(method, path,
                       body=None if body is None else json.dumps(body),
                       headers=self.h)
        r = self.c.getresponse()
        data = r.read()
        if r.status not in want:
            raise RuntimeError("%s %s answered %d: %s"
                               % (method, path, r.status, data[:300]))
        return json.loads(data) if data else None

    def create(self):
        return self.req("POST", "/v1/sandboxes", {}, want=(201,))["id"]

    def exec(self, sid, argv):
        return self.req("POST", "/v1/sandboxes/%s/exec" % sid,
                        {"argv": argv})

    def delete(self, sid):
        return self.req("DELETE", "/v1/sandboxes/%s" % sid)


class Stack:
    def __init__(self, quick):
        self.quick = quick
        self.dir = tempfile.mkdtemp(prefix="veto-bench.")
        os.chmod(self.dir, 0o755)       # sandbox uids reach their files
        self.procs = []
        self.nginx_conf = None
        self.redis_pid = None

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def start(self):
        self.start_helper()
        self.start_redis()
        self.make_keys()
        self.start_nginx()

    def start_helper(self):
        with open(self.path("helper.conf"), "w") as f:
            f.write("socket = %s\nallowed_uids = 0\nstate_dir = %s\n"
                    "cgroup_name = veto-bench-%d\nmax_sandboxes = 1024\n"
                    "max_execs_per_sandbox = 128\nmax_disk_mb = 4096\n"
                    "max_memory_mb = 4096\nmax_timeout_s = 600\n"
                    % (self.path("helper.sock"), self.path("state"),
                       os.getpid()))
        log = open(self.path("helper.log"), "w")
        p = subprocess.Popen([os.path.join(ROOT, BUILD, "sandbox-helper"),
                              "-c", self.path("helper.conf")], stderr=log)
        self.procs.append(p)
        self.helper_proc = p
        self.sock = self.path("helper.sock")
        for _ in range(100):
            if os.path.exists(self.sock):
                return
            if p.poll() is not None:
                break
            time.sleep(0.05)
        die("the helper did not start: see %s" % self.path("helper.log"))

    def start_redis(self):
        self.redis_sock = self.path("redis.sock")
        p = subprocess.Popen(["redis-server", "--port", "0",
                              "--unixsocket", self.redis_sock,
                              "--save", "", "--appendonly", "no",
                              "--dir", self.dir],
                             stdout=open(self.path("redis.log"), "w"),
                             stderr=subprocess.STDOUT)
        self.procs.append(p)
        self.redis_pid = p.pid
        for _ in range(100):
            if os.path.exists(self.redis_sock):
                return
            time.sleep(0.05)
        die("redis-server did not start: see %s" % self.path("redis.log"))

    def make_keys(self):
        d = self.dir
        run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
             "rsa_keygen_bits:2048", "-out", d + "/rsa.key"],
            stderr=subprocess.DEVNULL)
        run(["openssl", "pkey", "-in", d + "/rsa.key", "-pubout", "-out",
             d + "/rsa.pub"])
        run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
             "ec_paramgen_curve:P-256", "-out", d + "/ec.key"])
        run(["openssl", "pkey", "-in", d + "/ec.key", "-pubout", "-out",
             d + "/ec.pub"])
        with open(d + "/policy.json", "w") as f:
            json.dump({"version": 1, "tenants": {TENANT: {
                "ceilings": {"timeout_s": 600}}}}, f)
        mint = r'''
            use Crypt::JWT qw(encode_jwt);
            my ($d) = @ARGV;
            my $now = time;
            for my $a (["RS256", "rsa", "rsa"], ["ES256", "ec", "ec"]) {
                open(my $f, "<", "$d/$a->[1].key") or die "$d/$a->[1].key: $!";
                my $pem = do { local $/; <$f> };
                print encode_jwt(alg => $a->[0], key => \$pem,
                    extra_headers => { kid => $a->[2] },
                    payload => { iss => "bench", aud => "veto-sandbox",
                                 sub => "bench-agent", tenant => "bench",
                                 scope => "sandbox:create sandbox:exec",
                                 iat => $now, exp => $now + 7200 }), "\n";
            }'''
        out = run(["perl", "-e", mint, d], stdout=subprocess.PIPE).stdout
        self.rs256, self.es256 = out.decode().split()
        # the RS256 token with one signature bit flipped: a forgery
        h, p, s = self.rs256.split(".")
        sig = bytearray(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
        sig[17] ^= 1
        self.forged = "%s.%s.%s" % (
            h, p, base64.urlsafe_b64encode(bytes(sig)).rstrip(b"=").decode())

    def start_nginx(self):
        """Two nginx, one worker each: the API without Redis (what the
        gateway, life and scale sections measure) and with it (blocked)."""
        self.nginx = {}
        self.port = {k: free_port()
                     for k in ("plain", "cached", "verify", "verify_pool",
                               "verify_nice", "redis")}
        # verify_pool, verify_nice: no cache, signatures checked in a
        # thread pool of 2 threads (veto_sandbox_jwt_thread_pool), at the
        # worker's priority and at nice 10
        self.start_one_nginx("api", None, """
    server {
        listen 127.0.0.1:%d backlog=4096;
        location = /plain { return 200 "ok\\n"; }
    }
%s
%s
%s
%s""" % (self.port["plain"],
         self.server(self.port["cached"],
                     "veto_sandbox_jwt_cache zone=bench_jwt:4m;"),
         self.server(self.port["verify"], ""),
         self.server(self.port["verify_pool"],
                     "veto_sandbox_jwt_thread_pool bench_jwt;"),
         self.server(self.port["verify_nice"],
                     "veto_sandbox_jwt_thread_pool bench_jwt_nice nice=10;")),
                             main="thread_pool bench_jwt threads=2;\n"
                                  "thread_pool bench_jwt_nice threads=2;")
        self.start_one_nginx("redis", self.redis_sock,
                             self.server(self.port["redis"], ""))
        self.nginx_worker = self.nginx["api"]["worker"]

    def server(self, port, extra):
        d = self.dir
        return """
    server {
        listen 127.0.0.1:%d backlog=4096;
        veto_sandbox_helper unix:%s;
        veto_sandbox_jwt_key rsa RS256 %s/rsa.pub;
        veto_sandbox_jwt_key ec ES256 %s/ec.pub;
        veto_sandbox_jwt_issuer bench;
        veto_sandbox_jwt_audience veto-sandbox;
        veto_sandbox_policy %s/policy.json;
        veto_sandbox_helper_read_timeout 120s;
        %s
        location /v1/ { veto_sandbox_api; }
        location = /plain { return 200 "ok\\n"; }
    }""" % (port, self.sock, d, d, d, extra)

    def start_one_nginx(self, name, redis, servers, main=""):
        d = self.path("nginx-" + name)
        os.makedirs(d + "/logs")
        os.makedirs(d + "/tmp")
        conf = """
load_module %s/build-module/ngx_veto_sandbox_module.so;
user root;
worker_processes 1;
worker_rlimit_nofile 16384;
pid %s/nginx.pid;
error_log %s/logs/error.log warn;
events { worker_connections 8192; }
%s
http {
    access_log off;
    client_body_temp_path %s/tmp;
    %s
%s
}
""" % (ROOT, d, d, main, d,
       "veto_sandbox_redis unix:%s;" % redis if redis else "", servers)
        with open(d + "/nginx.conf", "w") as f:
            f.write(conf)
        run(["nginx", "-p", d, "-c", d + "/nginx.conf"])
        self.nginx[name] = {"dir": d}
        for _ in range(100):
            if os.path.exists(d + "/nginx.pid"):
                break
            time.sleep(0.05)
        else:
            die("nginx did not start: see %s/logs/error.log" % d)
        with open(d + "/nginx.pid") as f:
            master = int(f.read())
        for _ in range(100):
            kids = subprocess.run(["pgrep", "-P", str(master)],
                                  stdout=subprocess.PIPE).stdout.split()
            if kids:
                break
            time.sleep(0.05)
        else:
            die("nginx started no worker: see %s/logs/error.log" % d)
        self.nginx[name]["master"] = master
        self.nginx[name]["worker"] = int(kids[0])

    def url(self, which, path):
        return "http://127.0.0.1:%d%s" % (self.port[which], path)

    def stop(self, keep=False):
        for n in getattr(self, "nginx", {}).values():
            subprocess.run(["nginx", "-p", n["dir"], "-c",
                            n["dir"] + "/nginx.conf", "-s", "stop"],
                           stderr=subprocess.DEVNULL)
        if self.redis_pid:
            try:
                os.kill(self.redis_pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)
