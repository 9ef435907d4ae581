#!/usr/bin/perl
# Around the proxy nothing leaves the sandbox: TCP to other ports, UDP/53
# to any server, ICMP: all fail at once.  And the proxy holds against a
# hostile sandbox (slowloris, huge heads, malformed ClientHello, many
# connections, byte budgets) and a hostile or restarting control peer.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Time::HiRes qw(time sleep);
use VetoEgress;

my $e = VetoEgress->start(header_timeout_ms => 1000,
    proxy_conf => ['max_sandbox_head_connections = 64']);  # the sandbox limit, not the head cap
my ($rc, $out) = $e->setup_sandbox(
    allow  => ['registry.example.test', "$e->{reg_ip}:80"],
    limits => ['max_connections=20', 'max_bytes_in=100000']);
is($rc, 0, 'sandbox set up') or diag($out);
my %env = $e->proxy_env;

# direct traffic: the namespace has no way out but the proxy's sockets
my $t0 = time;
($rc, $out) = $e->in_sandbox(qq{python3 -c '
import socket, errno
def tcp(h, p):
    try:
        socket.create_connection((h, p), timeout=5); return "connected"
    except OSError as e: return errno.errorcode.get(e.errno, str(e))
print("tcp-host-6379", tcp("$e->{world_ip}", 6379))
print("tcp-reg-22", tcp("$e->{reg_ip}", 22))
print("tcp-reg-7000", tcp("$e->{target_ip}", 7000))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3)
try:
    u.sendto(b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x08registry\\x07example\\x04test\\x00\\x00\\x01\\x00\\x01", ("$e->{dns_ip}", 53))
    print("udp53", "answered", u.recv(512)[:2])
except OSError as ex: print("udp53", type(ex).__name__, errno.errorcode.get(ex.errno, ""))
try:
    r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); r.settimeout(3)
    r.sendto(b"\\x08\\x00\\xf7\\xff\\x00\\x00\\x00\\x00", ("$e->{reg_ip}", 0))
    print("icmp", "reply" if r.recv(100) else "none")
except OSError as ex: print("icmp", type(ex).__name__, errno.errorcode.get(ex.errno, ""))
'});
like($out, qr/tcp-host-6379 ECONNREFUSED/, "TCP to the proxy host's Redis port fails");
like($out, qr/tcp-reg-22 ECONNREFUSED/, 'TCP to another port of a test host fails');
like($out, qr/tcp-reg-7000 ECONNREFUSED/, 'TCP to a CONNECT target directly fails');
like($out, qr/udp53 \w+Error/, 'UDP/53 to the test DNS server fails');
unlike($out, qr/udp53 answered/, '... with no answer');
like($out, qr/icmp \w+Error/, 'ICMP echo fails');
ok(time - $t0 < 10, 'all at once (rejected, not timed out)');
ok(!grep({ ($_->{kind} // '') eq 'dns' } $e->host_log), 'the test DNS server never saw the sandbox');

# slowloris: a head that never completes is answered 408 after the timeout
($rc, $out) = $e->in_sandbox(q{python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 3128)); s.settimeout(10)
s.sendall(b"GET http://registry.example.test/ HTTP/1.1\r\nX-Slow: ")
t = time.time(); d = s.recv(4096)
print(d.split(b"\r\n")[0].decode(), round(time.time() - t))
'});
like($out, qr{HTTP/1.1 408 Request Timeout [1-3]$}, 'slowloris: 408 after the header timeout');

# a head larger than 16 KiB: 431
($rc, $out) = $e->in_sandbox(q{python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128)); s.settimeout(10)
try:
    s.sendall(b"GET http://registry.example.test/ HTTP/1.1\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n")
except OSError: pass
print(s.recv(4096).split(b"\r\n")[0].decode())
'});
like($out, qr{HTTP/1.1 431}, 'huge header: 431');

# malformed ClientHellos on the transparent socket: refused, proxy lives
for my $junk ('\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00',
              '\x16\x03\x01\xff\xff' . ('\x00' x 8), '\x16\x03\x01\x00\x04\x01\xff\xff\xff') {
    ($rc, $out) = $e->in_sandbox(qq{python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3129)); s.settimeout(5)
s.sendall(b"$junk")
try: print("got", s.recv(100))
except OSError as ex: print("err", ex)
'});
    like($out, qr/got b'\\x15\\x03\\x03\\x00\\x02\\x02\\x31'|got b'\\x15\\x03\\x03\\x00\\x02\\x021'|got b''|err/, 'malformed ClientHello: alert or close');
}
ok($e->proxy_alive, 'proxy alive after malformed input');

# many connections: beyond max_connections the sandbox gets 429 at once
($rc, $out) = $e->in_sandbox(q{python3 -c '
import socket
held = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(20)]
s = socket.create_connection(("127.0.0.1", 3128)); s.settimeout(5)
print(s.recv(4096).split(b"\r\n")[0].decode())
'});
like($out, qr{HTTP/1.1 429}, 'connection limit: 429 for the 21st');

# byte budget in: a 200 kB download stops at 100 kB
($rc, $out) = $e->in_sandbox('curl -sS -m 10 -o /dev/null -w "%{size_download}" http://registry.example.test/big', %env);
ok($out =~ /(\d+)/ && $1 <= 100000, 'byte limit in: download cut at the budget') or diag($out);
my @r = $e->records;
ok((grep { ($_->{reason} // '') =~ /byte limit in/ } @r), 'record says the byte limit was reached');
ok((grep { ($_->{reason} // '') =~ /connection limit/ } @r), 'record says the connection limit was reached');

# the control channel: strict, and the proxy outlives its peers
my @bad = (
    ['{"op":"nope"}', 'unknown_op'],
    ['{"op":"ping","x":1}', 'unknown_field'],
    ['{"op":"add","sandbox":"x","tenant":"t","listeners":["http"],"allow":[]}', 'bad_descriptors'],
    ['{"op":"add","sandbox":"x","listeners":["http"],"allow":[]}', 'missing_field'],
    ['{"op":"add","sandbox":"x","tenant":"a b","listeners":["http"],"allow":[]}', 'bad_value'],
    ['{"op":"remove","sandbox":"../../etc"}', 'bad_value'],
    ['{"op":"update","sandbox":"sb-none","allow":[]}', 'not_found'],
    ['{"op":"update","sandbox":"sb-test-' . $$ . '","allow":["bad host"]}', 'bad_value'],
    ['{"op":"update","sandbox":"sb-test-' . $$ . '","allow":["*.1.2.3.4"]}', 'bad_value'],
);
for my $b (@bad) {
    ($rc, $out) = $e->linkctl('raw', '--proxy', $e->{ctl}, $b->[0]);
    like($out, qr/"error":"$b->[1]"/, "control: $b->[0] -> $b->[1]");
}
($rc, $out) = $e->setup_sandbox(id => "sb-test-$$", allow => ['x.test']);
isnt($rc, 0, 'a second add of the same sandbox is refused');
($rc, $out) = VetoEgress::sh("printf 'GARBAGE-NOT-A-FRAME' | timeout 5 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(\"$e->{ctl}\")
s.sendall(sys.stdin.buffer.read()); print(s.recv(4096))'");
like($out, qr/bad_frame/, 'control: garbage gets bad_frame');
($rc, $out) = $e->linkctl('raw', '--proxy', $e->{ctl}, '{"op":"add","sandbox":"sb-over",'
    . '"tenant":"t","listeners":["http"],"allow":[],"limits":{"max_connections":999999}}');
like($out, qr/"error":"over_ceiling".*"limit":"max_connections"|"limit":"max_connections".*over_ceiling/,
    'limits over the ceiling: over_ceiling naming the limit');
ok($e->proxy_alive, 'proxy alive after hostile control input');

# sandboxes survive the helper reconnecting (each linkctl call is a new
# connection), their usage too: the spent budget is still spent, and says so
($rc, $out) = $e->in_sandbox('curl -sS -i -m 10 http://registry.example.test/again', %env);
like($out, qr/registry.example.test:80 is not allowed\nreason: byte limit in \(100000\) reached/,
    'sandbox (and its spent budget) kept across control reconnects');

# remove: every socket and connection of the sandbox closed, confirmed
($rc, $out) = $e->linkctl('remove', '--proxy', $e->{ctl}, '--sandbox', "sb-test-$$");
like($out, qr/"closed_listeners":5/, 'remove closed the five sockets');
($rc, $out) = $e->in_sandbox('curl -sS -m 5 http://registry.example.test/after', %env);
isnt($rc, 0, 'after remove the sandbox has no way out');
($rc, $out) = $e->linkctl('stats', '--proxy', $e->{ctl});
like($out, qr/"sandboxes":\[\]/, 'the proxy holds no state of it');

is($e->trapped, 0, 'nothing was sent to any address but the test hosts');
$e->finish;
done_testing;
