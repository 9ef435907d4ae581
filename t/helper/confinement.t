# What a workload cannot see or touch: host secrets, the helper's socket,
# config and environment, other sandboxes, host processes, host loopback
# services, capabilities, /usr.
use strict;
use warnings;
use Test::More;
use IO::Socket::INET;
use IO::Select;
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $h = VetoTest->start;
my $ida = $h->create_ok;
my $idb = $h->create_ok;

# --- host files --------------------------------------------------------
my ($e, $out, $err) = $h->sh($idb, 'cat /etc/shadow; echo rc=$?');
like($out, qr/rc=[1-9]/, 'cat /etc/shadow fails');
open(my $sh, '<', '/etc/shadow') or die "open /etc/shadow: $!";
my @shadow = grep { /^[^:]+:[^:*!]{8,}:/ } <$sh>;
close $sh;
ok(!grep({ index($out, (split /:/, $_)[1]) >= 0 } @shadow),
   'no host password hash in the output');

opendir(my $rd, '/root') or die "opendir /root: $!";
my @host_root = grep { !/^\.\.?$/ } readdir $rd;
closedir $rd;
($e, $out) = $h->sh($idb, 'ls -a /root 2>&1; echo rc=$?');
my @seen = grep { my $x = $_; grep { $_ eq $x } split /\s+/, $out } @host_root;
is(scalar @seen, 0, 'none of host /root is visible') or diag "@seen";

for my $path ($h->socket_path, $h->conf_path, $h->state_dir, $h->dir) {
    ($e, $out, $err) = $h->sh($idb, "ls -la '$path'; cat '$path'; echo rc=\$?");
    like($out, qr/rc=[1-9]/, "host path $path is not reachable");
    unlike($out, qr/cgroup_name|uid_base/, "no config content from $path");
}

# --- the helper's environment ------------------------------------------
# The pattern lives in a file so grep's own argv does not contain it.
# /proc/*/pagemap is skipped: one endless line without a newline, grep -a
# would hold it all and be OOM-killed (on v2 with the whole exec) before
# it got through the rest of /.
my $marker = $h->marker;
ok($h->write_file($idb, 'pat-env', "$marker\n")->{ok}, 'pattern file');
($e, $out, $err) = $h->sh($idb,
    'cat /proc/1/environ | tr "\0" "\n" | grep -c -F -f /workspace/pat-env; '
  . 'cp /workspace/pat-env /home/sandbox/control-env; '
  . 'timeout 50 grep -rlaF -f /workspace/pat-env --exclude=pat-env '
  . '--exclude=pagemap --exclude-dir=usr / 2>/dev/null; echo "rc=$?"',
    timeout_s => 60);
ok($e->{ok}, 'env search ran') or diag explain $e;
like($out, qr/\A0\n/, '/proc/1/environ is not the helper\'s');
unlike($out, qr/rc=124/, 'the search finished in time');
# the control copy proves the search works; nothing else may match
is($out =~ s/\A0\n//r =~ s/\nrc=\d+\n\z//r, '/home/sandbox/control-env',
   'helper environment marker found nowhere (but the control)')
    or diag $out;

# --- another sandbox's files -------------------------------------------
my $secret = 'SECRET' . VetoTest::random_hex(16);
ok($h->write_file($ida, 'secret.txt', "$secret\n")->{ok}, 'secret in sandbox A');
($e) = $h->sh($ida, "echo $secret > /tmp/secret2; echo $secret > /home/sandbox/secret3");
ok($h->write_file($idb, 'pat-sec', "$secret\n")->{ok}, 'pattern file in B');
($e, $out, $err) = $h->sh($idb,
    "ls -la '" . $h->state_dir . "/sb/$ida' 2>&1; echo rc=\$?; "
  . 'cp /workspace/pat-sec /tmp/control-sec; '
  . 'timeout 50 grep -rlaF -f /workspace/pat-sec --exclude=pat-sec '
  . '--exclude=pagemap --exclude-dir=usr / 2>/dev/null; echo "rc=$?"',
    timeout_s => 60);
like($out, qr/rc=[1-9]\n/, "A's directory is not reachable from B");
unlike($out, qr/rc=124/, 'the search finished in time');
like($out, qr/rc=\d+\n\/tmp\/control-sec\nrc=\d+\n\z/,
     "A's secret found nowhere in B (but the control)")
    or diag $out;
my ($r) = $h->read_file($idb, "../$ida/root/workspace/secret.txt");
is($r->{error}, 'bad_path', 'read_file cannot climb to another sandbox');
($r) = $h->read_file($ida, 'secret.txt', tenant => 't2');
is($r->{error}, 'not_found', 'another tenant cannot read A');
($e, $out) = $h->sh($ida, 'cat /workspace/secret.txt /tmp/secret2');
is($out, "$secret\n$secret\n", 'A still has its files (positive control)');

# --- processes -----------------------------------------------------------
($e, $out) = $h->sh($idb, 'ls /proc | grep -c "^[0-9]"; '
                        . 'cat /proc/[0-9]*/cmdline | tr "\0" " "');
my ($npid) = $out =~ /\A(\d+)/;
ok(defined $npid && $npid <= 5, "only a few pids visible (" . ($npid // '?') . ")");
unlike($out, qr/prove|perl|process_api|redis|nginx/, 'no host process visible');
my $conf = $h->conf_path;
unlike($out, qr/\Q$conf\E/,
       "no sandbox process shows the helper's command line (config path)");
my $hp = $h->pid;
($e, $out) = $h->sh($idb, "ls -d /proc/$hp >/dev/null 2>&1 && echo VISIBLE; "
                        . "kill -0 $hp 2>/dev/null && echo SIGNALLABLE; echo end");
is($out, "end\n", "the helper's pid $hp is neither visible nor signallable");

# --- network --------------------------------------------------------------
my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                Listen => 5, Proto => 'tcp', ReuseAddr => 1)
    or die "listen 127.0.0.1: $!";
my $port = $srv->sockport;
($e, $out, $err) = $h->exec($ida, [ '/bin/bash', '-c',
    "timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/$port && echo CONNECTED'; "
  . "timeout 5 python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", $port), 3); print(\"PYCONNECTED\")'; "
  . 'ip -o link 2>/dev/null || cat /proc/net/dev' ]);
unlike($out // '', qr/CONNECTED/, 'cannot connect to a host loopback port')
    or diag "$out\n$err";
my $sel = IO::Select->new($srv);
ok(!$sel->can_read(0.5), 'the host test server accepted nothing');
like($out, qr/\blo\b/, 'the sandbox has its own loopback');
unlike($out, qr/\b(eth\d|ens\d+|enp\w+|veth\w*)\b/, 'no host interface inside');
close $srv;

# --- privileges -----------------------------------------------------------
($e, $out) = $h->sh($idb, 'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|Uid|Gid):" /proc/self/status');
like($out, qr/^CapEff:\s+0{16}$/m, 'CapEff 0');
like($out, qr/^CapPrm:\s+0{16}$/m, 'CapPrm 0');
like($out, qr/^CapBnd:\s+0{16}$/m, 'CapBnd 0');
like($out, qr/^CapAmb:\s+0{16}$/m, 'CapAmb 0');
like($out, qr/^NoNewPrivs:\s+1$/m, 'NoNewPrivs 1');
like($out, qr/^Seccomp:\s+2$/m, 'seccomp filter mode');
like($out, qr/^Uid:\s+1000\s+1000\s+1000\s+1000$/m, 'runs as uid 1000');

# Host view of the same: the workload's host uid is in our range, not 0.
my $s = $h->connect;
VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $idb, argv => [ 'sleep', '3' ] }));
my @procs;
eventually('the workload runs', 2, sub {
    @procs = VetoTest::sandbox_uid_procs($h->uid_base, $h->uid_end);
    grep { /sleep/ } @procs;
});
ok(scalar(grep { /sleep/ } @procs), 'the workload runs under a host uid of our range')
    or diag join("\n", @procs);
VetoTest::recv_frame($s, 30);

# --- the sandbox's own init and kernel knobs --------------------------------
($e, $out, $err) = $h->sh($idb, 'kill -9 1; echo "kill1=$?"; '
    . 'echo b > /proc/sysrq-trigger; echo "sysrq=$?"; '
    . 'echo 1 > /proc/sys/kernel/sysrq; echo "sysctl=$?"; '
    . 'cat /proc/kcore | head -c 1 | wc -c; '
    . 'mount -t tmpfs none /tmp 2>/dev/null; echo "mount=$?"; '
    . 'ls /sys/fs/cgroup 2>/dev/null | wc -l');
ok($e->{ok} && defined $e->{exit_code}, 'the workload survives trying');
like($out, qr/kill1=[1-9]/, 'cannot kill the sandbox init');
like($out, qr/sysrq=[1-9]/, 'cannot write /proc/sysrq-trigger');
like($out, qr/sysctl=[1-9]/, 'cannot write /proc/sys');
like($out, qr/^0$/m, '/proc/kcore gives nothing');
like($out, qr/mount=[1-9]/, 'mount(8) fails');

# --- rlimits cannot be raised ------------------------------------------------
($e, $out) = $h->sh($idb, 'h=$(ulimit -Hn); echo "hard=$h"; '
    . 'ulimit -n $((h + 1)) 2>/dev/null; echo "raise=$?"; ulimit -c; ');
like($out, qr/hard=\d+\n/, 'open-files hard limit set');
like($out, qr/raise=[1-9]/, 'cannot raise the hard limit');
like($out, qr/^0$/m, 'core dumps off');

# --- read-only /usr ---------------------------------------------------------
my $name = "veto-x-$$";
($e, $out, $err) = $h->sh($idb, "touch /usr/bin/$name; echo rc=\$?; "
                              . "touch /usr/$name; echo rc=\$?");
like($out, qr/\Arc=[1-9]\nrc=[1-9]\n\z/, 'cannot write /usr') or diag "$out $err";
ok(!-e "/usr/bin/$name" && !-e "/usr/$name", 'host /usr untouched');
($e, $out) = $h->sh($idb, "echo x >> /etc/passwd; echo rc=\$?");
like($out, qr/rc=[1-9]/, 'cannot write /etc/passwd');

for ($ida, $idb) {
    is($h->destroy($_)->{state}, 'terminated', 'destroy');
}
$h->leaks_ok('after destroy');
$h->stop;
done_testing;
