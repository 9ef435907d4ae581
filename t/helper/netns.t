# One network namespace per sandbox, for its whole life: every exec of a
# sandbox joins it (a server started by one exec is reachable by a
# concurrent exec of the same sandbox, on port 80 too), two sandboxes
# never reach each other nor the host's loopback, a workload cannot
# reconfigure it, and nothing of it survives a destroy, 50 create/destroy
# cycles, or a kill -9 and restart.
use strict;
use warnings;
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $h = VetoTest->start;
$h->live_ok(0, 'at start');

my $ida = $h->create_ok;
my $idb = $h->create_ok;
$h->live_ok(2, 'with two live sandboxes');

my $nsa = $h->sandbox_netns($ida) // '';
my $nsb = $h->sandbox_netns($idb) // '';
like($nsa, qr/^net:\[\d+\]\z/, 'sandbox a has a pinned network namespace');
like($nsb, qr/^net:\[\d+\]\z/, 'sandbox b has one');
isnt($nsa, $nsb, 'not the same one');

# --- every exec joins its sandbox's namespace, with its own pid namespace --
my (@net, @pid);
for my $i (1 .. 2) {
    my ($e, $out) = $h->sh($ida, 'readlink /proc/self/ns/net /proc/self/ns/pid');
    my ($n, $p) = split /\n/, $out // '';
    push @net, $n // '';
    push @pid, $p // '';
}
is($net[0], $nsa, 'an exec runs in its sandbox\'s network namespace');
is($net[1], $nsa, 'and so does the next one');
isnt($pid[0], $pid[1], 'each exec has its own pid namespace');
my ($e, $out) = $h->sh($idb, 'readlink /proc/self/ns/net');
is($out, "$nsb\n", 'sandbox b\'s exec runs in b\'s namespace');
isnt($nsa, readlink('/proc/self/ns/net'), 'not the host\'s namespace');

# --- the workload cannot reconfigure it -------------------------------------
($e, $out) = $h->sh($ida, 'cat /proc/sys/net/ipv4/ip_unprivileged_port_start; '
    . 'echo 1024 > /proc/sys/net/ipv4/ip_unprivileged_port_start 2>/dev/null '
    . '&& echo wrote || echo refused');
is($out, "0\nrefused\n", 'ports from 0 are open to the workload; the sysctl is not writable');
($e, $out) = $h->exec($ida, ['python3', '-c', <<'PY']);
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    # SIOCSIFFLAGS: lo down, for every exec of the sandbox
    fcntl.ioctl(s, 0x8914, struct.pack('16sH14s', b'lo', 0, b''))
    print('lo down')
except OSError as e:
    print(e.errno)
PY
is($out, "1\n", 'taking loopback down: EPERM (no CAP_NET_ADMIN over it)');

# --- two concurrent execs of one sandbox share loopback ---------------------
my $server = <<'PY';
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', int(sys.argv[1])))
s.listen(8)
s.settimeout(20)
got = []
while True:
    c, _ = s.accept()
    m = c.recv(100).decode()
    got.append(m)
    c.sendall(b'pong:' + m.encode())
    c.close()
    if m == 'quit':
        break
print(' '.join(got))
PY
my $client = <<'PY';
import socket, sys, time
deadline = time.time() + (float(sys.argv[3]) if len(sys.argv) > 3 else 0)
while True:
    try:
        c = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)
        break
    except ConnectionRefusedError:
        if time.time() >= deadline:
            print('refused')
            sys.exit(0)
        time.sleep(0.05)
c.sendall(sys.argv[2].encode())
print(c.recv(100).decode())
PY

my $ss = $h->connect;
VetoTest::write_all($ss, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $ida, argv => [ 'python3', '-c', $server, '80' ] }))
    or die "send server exec: $!";
($e, $out) = $h->exec($ida, ['python3', '-c', $client, '80', 'hello', '10']);
is($out, "pong:hello\n", 'a concurrent exec of the same sandbox reached its server on port 80')
    or diag explain $e;

# --- two sandboxes never reach each other, nor the host's loopback ----------
($e, $out) = $h->exec($idb, ['python3', '-c', $client, '80', 'from-b']);
is($out, "refused\n", 'another sandbox cannot reach it') or diag explain $e;

my $host = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                 Listen => 5, ReuseAddr => 1)
    or die "host listener: $!";
($e, $out) = $h->exec($ida, ['python3', '-c', $client, '' . $host->sockport, 'to-host']);
is($out, "refused\n", 'nor can it reach a server on the host\'s loopback');
close $host;

($e, $out) = $h->exec($ida, ['python3', '-c', $client, '80', 'quit']);
is($out, "pong:quit\n", 'server told to quit');
my ($sr, $sp) = VetoTest::recv_frame($ss, 30);
my (undef, $sout) = VetoTest::split_output($sr, $sp);
is($sout, "hello quit\n", 'the server saw only its own sandbox\'s clients');

# --- destroy: nothing of the namespace remains ------------------------------
for my $id ($ida, $idb) {
    my $d = $h->destroy($id);
    is($d->{state}, 'terminated', 'destroy') or diag explain $d;
    ok($d->{confirmed}{network}, 'network confirmed');
}
$h->live_ok(0, 'after destroy');
for my $ns ($nsa, $nsb) {
    my @hold = $h->netns_holders($ns);
    is(scalar @hold, 0, "nothing of ours holds $ns any more")
        or diag(join(', ', @hold));
}

# --- 50 create/destroy cycles ------------------------------------------------
my (@cyc, @fail);
my $t0 = time;
for my $i (1 .. 50) {
    my $id = $h->create_ok;
    my $ns = $h->sandbox_netns($id);
    push @cyc, $ns if defined $ns;
    if ($i % 10 == 0) {
        ($e, $out) = $h->sh($id, 'readlink /proc/self/ns/net; sleep 0.1 & echo');
        push @fail, "exec $i: " . ($out // '') unless ($out // '') eq "$ns\n\n";
    }
    my $d = $h->destroy($id);
    push @fail, "destroy $i: " . $h->json->encode($d)
        unless ($d->{state} // '') eq 'terminated' && $d->{confirmed}{network};
}
is(scalar @cyc, 50, sprintf('50 sandboxes had a namespace (%.1f s)', time - $t0));
is(scalar @fail, 0, '50 cycles confirmed') or diag(join("\n", @fail));
$h->live_ok(0, 'after 50 cycles');
my @held = grep { $h->netns_holders($_) } @cyc;
is(scalar @held, 0, 'none of the 50 namespaces is held by anything')
    or diag(join(', ', @held));

# --- kill -9 and restart ---------------------------------------------------
my @old = map { $h->create_ok } 1 .. 3;
my @oldns = map { $h->sandbox_netns($_) } @old;
is(scalar(grep { defined } @oldns), 3, 'three more sandboxes, three namespaces');
my $bg = $h->connect;
VetoTest::write_all($bg, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $old[0], argv => [ 'sleep', '1000' ] }));
eventually('the exec runs', 5, sub { $h->count_procs >= 1 });
$h->kill9;
eventually('the workloads died with the helper', 3, sub { !$h->count_procs });
is($h->count_netns, 3, 'their pinned namespaces outlive a kill -9')
    or diag $h->leak_detail;
$h->launch;
my $log = $h->log_text;
is(scalar(grep { $log =~ /cleaned up stale network namespace of \Q$_\E/ } @old),
   3, 'the restart says it removed them');
$h->live_ok(0, 'after the restart');
@held = grep { $h->netns_holders($_) } grep { defined } @oldns;
is(scalar @held, 0, 'nothing holds the old namespaces any more')
    or diag(join(', ', @held));

my $new = $h->create_ok;
($e, $out) = $h->sh($new, 'readlink /proc/self/ns/net');
is($out, $h->sandbox_netns($new) . "\n", 'the restarted helper gives sandboxes namespaces');
is($h->destroy($new)->{state}, 'terminated', 'destroy');

is($h->stop, 0, 'helper exits 0') or diag $h->log_text;
$h->leaks_ok('at the end');
done_testing;
