# Landlock as the second wall: the helper reports the kernel's ABI; a
# write, read or exec the mounts and file modes allow but the ruleset
# does not is refused by Landlock itself; on ABI >= 6 a process outside
# the exec's Landlock domain can be neither signalled nor reached over an
# abstract unix socket, although the user and namespaces would allow it
# (an outsider joined to the exec's namespaces, a concurrent exec).
use strict;
use warnings;
use Test::More;
use File::Copy qw(copy);
use POSIX qw(uname);
use lib 't/lib';
use VetoTest qw(random_hex);
use Eventually qw(eventually);

# The kernel's own answer (landlock_create_ruleset(NULL, 0, VERSION)).
my $kabi = syscall(444, 0, 0, 1);
$kabi = 0 if $kabi < 0;
my ($kmaj, $kmin) = (uname())[2] =~ /^(\d+)\.(\d+)/;
my $kver = $kmaj * 1000 + $kmin;

# Landlock is in every kernel this project supports (5.13+); ABI 6
# (scopes) since 6.12.  A kernel that should have it and does not fails
# here: that is a broken precondition, not something to skip.
ok($kabi >= 1, "kernel has Landlock (ABI $kabi)")
    or diag 'is CONFIG_SECURITY_LANDLOCK on and "landlock" in lsm=?';
ok($kabi >= 6, "kernel $kmaj.$kmin has Landlock ABI >= 6 (scopes)")
    if $kver >= 6012;

my $h = VetoTest->start;
my $ping = $h->ping;
is($ping->{seccomp}, 'allowlist', 'ping: seccomp is an allowlist');
is($ping->{landlock_abi}, $kabi > 7 ? 7 : $kabi,
   'ping: the Landlock ABI in use (the kernel\'s, up to the reviewed 7)');
like($h->log_text, qr/landlock: kernel ABI $kabi, used at \d/,
     'the start is logged with the ABI');

my $id = $h->create_ok;
my $root = $h->state_dir . "/sb/$id/root";
ok(-d "$root/workspace", 'the sandbox root is on the host at state/sb/<id>/root');

# --- files: the mounts and the modes allow it, Landlock does not -------
#
# Test-only: from the host, put a directory writable by the workload user
# (mode 0777, owned by it) on the sandbox's root tmpfs outside its
# writable directories, a world-readable file and an executable next to
# it.  Inside, /var/ll-open sits on the same read-write mount as
# /workspace; only the Landlock ruleset tells them apart.
my @st = stat("$root/workspace") or die "stat workspace: $!";
my $host_wuid = $st[4];
mkdir "$root/var/ll-open" or die "mkdir: $!";
chown $host_wuid, $host_wuid, "$root/var/ll-open" or die "chown: $!";
chmod 0777, "$root/var/ll-open" or die "chmod: $!";
open(my $fh, '>', "$root/var/ll-secret") or die "write: $!";
print $fh "not for the workload\n";
close $fh;
chmod 0644, "$root/var/ll-secret";
copy('/usr/bin/true', "$root/var/ll-true") or die "copy true: $!";
chmod 0755, "$root/var/ll-true";

my ($e, $out, $err) = $h->sh($id, <<'SH');
stat -c 'open %d %u %a' /var/ll-open
stat -c 'workspace %d %u %a' /workspace
awk '$5 == "/" { split($6, o, ","); print "rootmount " o[1] }' /proc/self/mountinfo
touch /workspace/ok && echo workspace-write=ok
touch /var/ll-open/x 2>&1; echo write-rc=$?
cat /var/ll-secret 2>&1; echo read-rc=$?
/var/ll-true 2>&1; echo exec-rc=$?
ls /var >/dev/null && echo list=ok
SH
is($e->{exit_code}, 0, 'file probe ran') or diag explain [$e, $err];
my ($dev_open) = $out =~ /^open (\d+) 1000 777$/m;
my ($dev_ws) = $out =~ /^workspace (\d+) 1000 755$/m;
ok(defined $dev_open, '/var/ll-open is owned by the workload, mode 777')
    or diag $out;
is($dev_open, $dev_ws, '... on the same filesystem as /workspace');
like($out, qr/^rootmount rw$/m, '... which is mounted read-write');
like($out, qr/^workspace-write=ok$/m, 'writing /workspace works');
like($out, qr{touch: cannot touch '/var/ll-open/x': Permission denied\nwrite-rc=1}m,
     'writing /var/ll-open is refused by Landlock (EACCES)');
ok(!-e "$root/var/ll-open/x", '... and nothing was created');
like($out, qr{cat: /var/ll-secret: Permission denied\nread-rc=1}m,
     'reading a world-readable file outside the allowed trees is refused');
like($out, qr{Permission denied\nexec-rc=126}m,
     'executing a 0755 binary outside the allowed trees is refused');
like($out, qr/^list=ok$/m, 'listing directories stays allowed');

# --- scopes: an outsider in the exec's own namespaces ------------------
SCOPES1: {
    # a kernel before ABI 6 has no scopes: the helper must not claim them
    if ($kabi < 6 && $kver < 6012) {
        ok($ping->{landlock_abi} < 6,
           "kernel $kmaj.$kmin: no Landlock scopes, none claimed");
        last SCOPES1;
    }

    my $mark = 'vsbll' . random_hex(6);
    my $sock = $h->connect;
    VetoTest::write_all($sock, VetoTest::frame({
        op => 'exec', tenant => 't1', agent => 'a1', id => $id,
        argv => ['/bin/sh', '-c', <<"SH", $mark] }));
i=0; while [ ! -e /tmp/outsider ]; do
    i=\$((i+1)); [ \$i -lt 300 ] || { echo no-outsider; exit 9; }; sleep 0.1
done
read pid < /tmp/outsider
exec python3 - "\$pid" "$mark" <<'PY'
import os, socket, subprocess, sys
pid, mark = int(sys.argv[1]), sys.argv[2]
def attempt(name, f):
    try:
        f()
        print(name + "=ok")
    except OSError as e:
        print(name + "=" + (os.strerror(e.errno)))
with open("/proc/%d/status" % pid) as st:
    print("outsider-uid=" + [l.split()[1] for l in st if l.startswith("Uid:")][0])
print("own-uid=%d" % os.getuid())
attempt("signal-outsider", lambda: os.kill(pid, 0))
child = subprocess.Popen(["sleep", "30"])
attempt("signal-own", lambda: os.kill(child.pid, 0))
child.kill(); child.wait()
def conn(name):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect("\\0" + name)
    c.close()
attempt("abstract-outsider", lambda: conn(mark))
own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
own.bind("\\0" + mark + "-own"); own.listen(1)
attempt("abstract-own", lambda: conn(mark + "-own"))
PY
SH

    # the workload's host pid: its argv carries the mark
    my $wpid;
    eventually('the workload runs', 30, sub {
        for my $p (VetoTest::sandbox_uid_procs($h->uid_base, $h->uid_end)) {
            $wpid = $1 if $p =~ /^(\d+)\(\d+\): \/bin\/sh -c .*\Q$mark\E/s;
        }
        $wpid;
    });
    ok($wpid, 'found the workload on the host') or last SCOPES1;
    my ($wuid_host) = map { /^Uid:\s+(\d+)/ ? $1 : () }
        do { open(my $s, '<', "/proc/$wpid/status") or die $!; <$s> };

    # an abstract listener in the exec's network namespace, outside its
    # Landlock domain (as a proxy or agent of the host would be)
    my $ready = $h->dir . "/ll-ready-$$";
    my $lpid = fork() // die "fork: $!";
    if ($lpid == 0) {
        exec('nsenter', "--net=/proc/$wpid/ns/net", '--', 'python3', '-c',
             'import socket,sys,time; s=socket.socket(socket.AF_UNIX);'
             . 's.bind("\0"+sys.argv[1]); s.listen(8); open(sys.argv[2],"w");'
             . 'time.sleep(60)', $mark, $ready) or POSIX::_exit(127);
    }

    # a process of the workload's own uid in the exec's pid namespace,
    # outside its Landlock domain; nsenter forks it into the namespace
    my $spid = fork() // die "fork: $!";
    if ($spid == 0) {
        exec('nsenter', "--pid=/proc/$wpid/ns/pid", '--', 'setpriv',
             "--reuid=$wuid_host", "--regid=$wuid_host", '--clear-groups',
             'sleep', '60') or POSIX::_exit(127);
    }

    my $inner;
    eventually('the outsiders start', 20, sub {
        for my $p (VetoTest::sandbox_uid_procs($wuid_host, $wuid_host + 1)) {
            next unless $p =~ /^(\d+)\(\d+\): sleep 60/;
            open(my $s, '<', "/proc/$1/status") or next;
            for (<$s>) { $inner = (split)[-1] if /^NSpid:\s+\d+\s+\d+/ }
        }
        $inner && -e $ready;
    });
    ok($inner && -e $ready, 'outsiders started (signal target and listener)')
        or diag "inner pid " . ($inner // 'none');

    open(my $o, '>', "$root/tmp/outsider.tmp") or die $!;
    print $o ($inner // 0), "\n";
    close $o;
    rename "$root/tmp/outsider.tmp", "$root/tmp/outsider" or die $!;

    my ($r, $p) = VetoTest::recv_frame($sock, 90);
    my (undef, $sout, $serr) = VetoTest::split_output($r, $p);
    is($r->{exit_code}, 0, 'scope probe ran') or diag explain [$r, $serr];
    like($sout, qr/^outsider-uid=1000$/m,
         'the outsider runs as the workload\'s own uid (kill would be allowed)');
    like($sout, qr/^signal-outsider=Operation not permitted$/m,
         'signalling a process outside the Landlock domain is refused');
    like($sout, qr/^signal-own=ok$/m, 'signalling its own child works');
    like($sout, qr/^abstract-outsider=Operation not permitted$/m,
         'connecting to an abstract socket outside the domain is refused');
    like($sout, qr/^abstract-own=ok$/m,
         'its own abstract sockets work');

    kill 'KILL', $lpid, $spid;
    waitpid($_, 0) for $lpid, $spid;
    unlink $ready;
}

# Two execs of one sandbox share its network namespace, but each is its
# own Landlock domain: an abstract socket of one is out of the other's
# reach, a socket file under /tmp is not.
SCOPES2: {
    # a kernel before ABI 6 has no scopes: the helper must not claim them
    if ($kabi < 6 && $kver < 6012) {
        ok($ping->{landlock_abi} < 6,
           "kernel $kmaj.$kmin: no Landlock scopes, none claimed");
        last SCOPES2;
    }

    my $name = 'vsbx' . random_hex(6);
    my $sock = $h->connect;
    VetoTest::write_all($sock, VetoTest::frame({
        op => 'exec', tenant => 't1', agent => 'a1', id => $id,
        argv => ['python3', '-c', <<'PY', $name] }));
import os, socket, sys, time
a = socket.socket(socket.AF_UNIX); a.bind("\0" + sys.argv[1]); a.listen(8)
p = socket.socket(socket.AF_UNIX); p.bind("/tmp/" + sys.argv[1]); p.listen(8)
open("/tmp/" + sys.argv[1] + ".ready", "w").close()
for _ in range(300):
    if os.path.exists("/tmp/" + sys.argv[1] + ".done"):
        break
    time.sleep(0.1)
print("listener done")
PY
    my ($e2, $o2) = $h->exec($id, ['python3', '-c', <<'PY', $name]);
import os, socket, sys, time
n = sys.argv[1]
for _ in range(300):
    if os.path.exists("/tmp/" + n + ".ready"):
        break
    time.sleep(0.1)
def attempt(what, addr):
    try:
        socket.socket(socket.AF_UNIX).connect(addr)
        print(what + "=ok")
    except OSError as e:
        print(what + "=" + os.strerror(e.errno))
attempt("abstract-other-exec", "\0" + n)
attempt("file-other-exec", "/tmp/" + n)
open("/tmp/" + n + ".done", "w").close()
PY
    my ($r1) = VetoTest::recv_frame($sock, 60);
    is($r1->{exit_code}, 0, 'listener exec ran');
    is($e2->{exit_code}, 0, 'client exec ran') or diag explain $e2;
    like($o2 // '', qr/^abstract-other-exec=Operation not permitted$/m,
         'an abstract socket of a concurrent exec is out of reach');
    like($o2 // '', qr/^file-other-exec=ok$/m,
         'a socket file of a concurrent exec is reachable');
}

is($h->destroy($id)->{state}, 'terminated', 'destroy');
$h->leaks_ok('after destroy');
$h->stop;
done_testing;
