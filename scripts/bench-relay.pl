#!/usr/bin/perl
# The egress proxy's relay, timed inside t/lib/VetoEgress.pm's namespaces
# (nothing leaves the machine): a client in the sandbox namespace opens a
# CONNECT tunnel through the proxy to a test host and
#   - reads MB megabytes a host streams (throughput, MB/s), and
#   - makes TRIPS 64-byte round trips with an echo host (each one a few
#     turns of the proxy's event loop: its per-event cost, in us);
# REPS tunnels of each, and the proxy's own CPU time per MB and per
# round trip (its time on a CPU, from /proc).  One JSON line on stdout.  The
# proxy is build/egress-proxy, or VETO_EGRESS: run two builds in turn to
# compare them on the same machine.  A number never fails the run.
#
#   sudo scripts/bench-relay.pl [MB] [TRIPS] [REPS]   (default 256 20000 3)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../t/lib";
use Test::More ();         # VetoEgress reports through it
use VetoEgress;
use Eventually qw(eventually);
use JSON::PP ();

my ($MB, $TRIPS, $REPS) = (shift // 256, shift // 20000, shift // 3);
chdir "$FindBin::Bin/..";

my $server = <<'PY';
import socket, sys, threading
ip, chunk = sys.argv[1], b"x" * (1 << 20)

def stream(c):
    mb = int(c.makefile("rb").readline())
    for _ in range(mb):
        c.sendall(chunk)
    c.close()

def echo(c):
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()

def serve(port, fn, ready=False):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((ip, port))
    l.listen(16)
    if ready:
        print("ready", flush=True)
    while True:
        c, _ = l.accept()
        threading.Thread(target=fn, args=(c,), daemon=True).start()

threading.Thread(target=serve, args=(7001, stream), daemon=True).start()
serve(7002, echo, True)
PY

my $client = <<'PY';
import json, socket, sys, time
mode, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def tunnel(port):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT target.example.test:%d HTTP/1.1\r\n"
              b"Host: target.example.test:%d\r\n\r\n" % (port, port))
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            sys.exit("tunnel closed: %r" % buf)
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    if b" 200" not in head.split(b"\r\n")[0]:
        sys.exit("tunnel refused: %r" % head)
    return s, rest

out = []
for _ in range(reps):
    if mode == "stream":
        s, rest = tunnel(7001)
        t0 = time.perf_counter()
        s.sendall(b"%d\n" % n)
        got, want = len(rest), n << 20
        while got < want:
            d = s.recv(1 << 20)
            if not d:
                sys.exit("stream ended at %d of %d bytes" % (got, want))
            got += len(d)
        out.append(round(got / (time.perf_counter() - t0) / 1e6, 1))
    else:
        s, rest = tunnel(7002)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        msg = b"p" * 64
        t0 = time.perf_counter()
        for _ in range(n):
            s.sendall(msg)
            got = 0
            while got < len(msg):
                d = s.recv(len(msg) - got)
                if not d:
                    sys.exit("echo closed")
                got += len(d)
        out.append(round((time.perf_counter() - t0) / n * 1e6, 2))
    s.close()
print(json.dumps(out))
PY

my $e = VetoEgress->start;
$e->write_file('bench-server.py', $server);
$e->write_file('bench-client.py', $client);
my $out = "$e->{dir}/bench-server.out";
$e->{bench_pid} = $e->spawn($out, 'ip', 'netns', 'exec', $e->{hosts},
    'python3', "$e->{dir}/bench-server.py", $e->{target_ip});
eventually('the bench hosts start', 20,
           sub { $e->slurp($out) =~ /ready/ })
    or die "the bench hosts did not start:\n" . $e->slurp($out);

my ($rc, $o) = $e->setup_sandbox(
    allow => ['target.example.test:7001', 'target.example.test:7002']);
die "sandbox setup: $o" if $rc != 0;

# the proxy's own CPU time (/proc/PID/schedstat, ns) around each phase:
# far less disturbed by a busy machine than the wall-clock figures
sub proxy_cpu_ms
{
    open(my $f, '<', "/proc/$e->{proxy_pid}/schedstat")
        or die "proxy schedstat: $!";
    return (split / /, scalar <$f>)[0] / 1e6;
}

my %r;
for my $phase (['stream', $MB, 'mb_s', 'cpu_ms_per_mb', $MB],
               ['echo', $TRIPS, 'rtt_us', 'cpu_us_per_trip', $TRIPS / 1000])
{
    my ($mode, $n, $wall, $cpu, $units) = @$phase;
    my $c0 = proxy_cpu_ms();
    ($rc, $o) = $e->in_sandbox("python3 $e->{dir}/bench-client.py $mode $n $REPS");
    my $c1 = proxy_cpu_ms();
    die "client ($mode): $o" if $rc != 0;
    $r{$wall} = JSON::PP::decode_json($o);
    $r{$cpu} = sprintf('%.3f', ($c1 - $c0) / ($units * $REPS)) + 0;
}
$e->cleanup;               # the bench hosts go with their namespace
print JSON::PP->new->canonical(1)->encode(\%r), "\n";
