# A hostile workload, second round: host services it must not reach
# (abstract unix sockets, a real Redis on host loopback), kernel and host
# interfaces it must not see or use (/sys, cgroupfs, the init's /proc
# entries, ptrace, kill -1, xattr capabilities, setuid), files planted for
# the root helper (FIFOs, sockets, sparse, unreadable), the root layout it
# must not be able to rearrange for the next exec's init, and the seccomp
# filter on every thread and child.
use strict;
use warnings;
use Test::More;
use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $h = VetoTest->start;
my $id = $h->create_ok;

# --- host services ---------------------------------------------------------
my $abs = "veto-abs-$$-" . VetoTest::random_hex(4);
my $ul = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => "\0$abs",
                               Listen => 5)
    or die "abstract listener: $!";
my $probe = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => "\0$abs");
ok($probe, 'host control: the abstract socket accepts on the host');
my $c = $ul->accept;
close $_ for grep { defined } $probe, $c;

# A real Redis of our own on host loopback (never the machine's).
my $rport = 20000 + $$ % 20000;
my $rpid = fork() // die "fork: $!";
if ($rpid == 0) {
    open(STDOUT, '>', '/dev/null');
    open(STDERR, '>', '/dev/null');
    exec('redis-server', '--port', $rport, '--bind', '127.0.0.1',
         '--save', '', '--appendonly', 'no', '--daemonize', 'no')
        or POSIX::_exit(127);
}
my $rs;
eventually("our Redis listens on 127.0.0.1:$rport", 5,
           sub { $rs = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$rport") });
ok($rs, "host control: our Redis answers on 127.0.0.1:$rport");
close $rs if $rs;

my $py = <<"PY";
import socket, sys
def try_(name, fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(addr)
        if fam == socket.AF_INET:
            s.sendall(b"PING\\r\\n")
            print(name, "CONNECTED", s.recv(16))
        else:
            print(name, "CONNECTED")
    except Exception as e:
        print(name, "refused", type(e).__name__)
try_("abstract", socket.AF_UNIX, "\\0$abs")
try_("redis", socket.AF_INET, ("127.0.0.1", $rport))
try_("redis6", socket.AF_INET6, ("::1", $rport))
# positive control: an abstract socket of the sandbox's own
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
l.bind("\\0inner-$abs"); l.listen(1)
try_("inner", socket.AF_UNIX, "\\0inner-$abs")
PY
ok($h->write_file($id, 'net.py', $py)->{ok}, 'network probe written');
my ($e, $out, $err) = $h->exec($id, ['python3', '/workspace/net.py']);
like($out, qr/^abstract refused/m, "host abstract unix socket unreachable")
    or diag "$out\n$err";
like($out, qr/^redis refused/m, 'host Redis on 127.0.0.1 unreachable');
like($out, qr/^redis6 refused/m, 'nor on ::1');
like($out, qr/^inner CONNECTED/m, 'the sandbox\'s own abstract socket works (control)');
my @acc = IO::Select->new($ul)->can_read(0.3);
is(scalar @acc, 0, 'the host abstract listener accepted nothing');
close $ul;
kill 'TERM', $rpid;
waitpid($rpid, 0);

($e, $out) = $h->sh($id, 'ls -A /run /var 2>&1; echo; ls /run/*.sock /var/run 2>&1 | wc -l');
unlike($out, qr/\.sock|redis|systemd|dbus|docker|containerd|nscd/,
       'no host sockets under /run or /var') or diag $out;

# --- kernel and host interfaces ------------------------------------------
($e, $out, $err) = $h->sh($id, join('; ',
    'test -e /sys && echo SYS-PRESENT',
    'ls /sys/fs/cgroup >/dev/null 2>&1 && echo CGROUPFS',
    'grep -E " - (cgroup2?|sysfs|debugfs|tracefs|securityfs|bpf|configfs|fusectl) " /proc/self/mountinfo && echo FS-MOUNTED',
    'grep -v ":/\$" /proc/self/cgroup && echo CG-NOT-ROOT',
    'for f in environ mem maps cwd root fd auxv; do '
        . 'if cat /proc/1/$f >/dev/null 2>&1 || ls /proc/1/$f/ >/dev/null 2>&1; '
        . 'then echo "INIT-$f-READABLE"; fi; done',
    'echo end'));
is($out, "end\n", 'no /sys, no cgroupfs or other kernel fs mounted, cgroup root "/", '
   . "the init's /proc/1/{environ,mem,maps,cwd,root,fd,auxv} unreadable")
    or diag $out;

# ptrace of the init and of a sibling: refused (seccomp, and uids differ)
($e, $out) = $h->sh($id, 'sleep 5 & perl -e \'
    $r = syscall(101, 16, 1, 0, 0);  print "attach1=", ($r == -1 ? $!+0 : 0), "\n";
    $r = syscall(101, 16, $ARGV[0], 0, 0);  print "attach2=", ($r == -1 ? $!+0 : 0), "\n";
    \' $!; kill $!');
like($out, qr/attach1=[1-9]\d*\nattach2=[1-9]/, 'PTRACE_ATTACH to the init and to a sibling refused')
    or diag $out;

# kill -9 -1 kills only the workload's own processes
my $t0 = time;
($e, $out) = $h->sh($id, 'sleep 30 & kill -9 -1; echo survived');
ok($e->{ok}, 'kill -9 -1 exec replied');
ok(time - $t0 < 10, 'promptly');
eventually('nothing left after kill -9 -1', 3, sub { !$h->count_procs });
ok(kill(0, $$) && kill(0, $h->pid), 'the test and the helper are alive');
($e, $out) = $h->sh($id, 'echo next');
is($out, "next\n", 'the sandbox still works after kill -9 -1');

# /dev holds exactly the minimal set
($e, $out) = $h->sh($id, 'ls -A /dev | sort | tr "\n" " "');
is($out, 'fd full null ptmx pts random shm stderr stdin stdout tty urandom zero ',
   '/dev has only the minimal set');
($e, $out) = $h->sh($id, 'ls -A /dev/pts | tr "\n" " "');
is($out, 'ptmx ', 'a private devpts: no host terminals');

# every mount is nosuid; every writable one except devices is nodev
($e, $out) = $h->sh($id, 'cat /proc/self/mountinfo');
my @bad = grep { my @f = split / /; $f[5] !~ /\bnosuid\b/ } split /\n/, $out;
is(scalar @bad, 0, 'every mount is nosuid') or diag join("\n", @bad);
@bad = grep { my @f = split / /; $f[5] =~ /\brw\b/ && $f[5] !~ /\bnodev\b/
              && $f[4] !~ m{^/dev/(null|zero|full|random|urandom|tty|pts)$} }
       split /\n/, $out;
is(scalar @bad, 0, 'every writable mount but the device binds is nodev')
    or diag join("\n", @bad);
my $sd = $h->state_dir;
unlike($out, qr/\Q$sd\E|veto-t-/, 'mountinfo does not name the host state_dir');

# setuid and file capabilities: the bits do not stick or do not matter
ok(!$h->write_file($id, 'suid', "x", mode => 04755)->{ok},
   'write_file refuses a setuid mode');
($e, $out) = $h->sh($id, 'cp /usr/bin/id /workspace/myid && chmod 4755 /workspace/myid; '
    . '/workspace/myid -u; '
    . 'python3 -c "import os; os.setxattr(\'/workspace/myid\', \'security.capability\', '
    . 'bytes.fromhex(\'0100000200000000000000000000000000000000\'))" 2>&1 | tail -1; '
    . 'cp /usr/bin/su /workspace/su 2>/dev/null; /workspace/su -c id 2>&1 | head -1');
like($out, qr/\A1000\n/, 'a setuid copy runs as the workload user');
like($out, qr/PermissionError|Operation not permitted/, 'security.capability xattr refused');
unlike($out, qr/uid=0/, 'su does not give inside-root');

# --- the root layout cannot be rearranged for the next exec's init -------
($e, $out) = $h->sh($id, join('; ',
    'for d in /tmp /var/tmp /workspace /home/sandbox /proc /dev /usr /etc /run '
        . '/etc/ld.so.cache /etc/ssl/certs /etc/passwd; do '
        . 'mv $d $d.x 2>/dev/null && echo "MOVED $d"; '
        . 'rm -rf $d 2>/dev/null; test -e $d || echo "REMOVED $d"; done',
    'ln -s / /evil 2>/dev/null && echo LINKED',
    'ln -sf /workspace /etc/ld.so.cache 2>/dev/null && echo REPLACED',
    'echo end'), timeout_s => 20 * VetoTest::time_scale());  # rm -rf walks /usr, /proc
is($out, "end\n", 'no mount point or /etc entry can be moved, removed or replaced')
    or diag explain [$out, $e];
($e, $out) = $h->sh($id, q{awk '{print $5}' /proc/self/mountinfo | sort | tr "\n" " "; }
                      . 'test -d /workspace && test -d /tmp && cat /proc/self/comm');
like($out, qr{^/ /dev .*/etc/ld\.so\.cache .*/proc .*/usr }, 'the next exec has its usual mounts')
    or diag $out;

# --- files planted for the root helper -------------------------------------
($e, $out, $err) = $h->sh($id, join('; ',
    'cd /workspace',
    'mkfifo fifo',
    'python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.bind(\'sock\')"',
    'truncate -s 40M sparse',
    'truncate -s 15M sparse-small',
    'echo secret > unreadable && chmod 000 unreadable',
    'ls -l'));
is($e->{exit_code}, 0, 'FIFO, socket, sparse and mode-000 files planted') or diag $err;
$t0 = time;
my ($r) = $h->read_file($id, 'fifo');
is($r->{error}, 'not_a_file', 'read_file of a FIFO: not_a_file');
ok(time - $t0 < 3, 'and without blocking the helper');
($r) = $h->write_file($id, 'fifo', "x");
is($r->{error}, 'not_a_file', 'write_file onto a FIFO: not_a_file');
($r) = $h->read_file($id, 'sock');
is($r->{error}, 'not_a_file', 'read_file of a socket: not_a_file');
$t0 = time;
($r) = $h->read_file($id, 'sparse');
is($r->{error}, 'file_too_large', 'a 40 MiB sparse file: file_too_large');
ok(time - $t0 < 2, 'refused before reading');
($r, my $data) = $h->read_file($id, 'sparse-small');
ok($r->{ok} && length($data) == 15 * 1024 * 1024, 'a 15 MiB sparse file reads');
($r) = $h->read_file($id, 'unreadable');
ok(!$r->{ok}, 'a mode-000 file is not read with root\'s rights (' . ($r->{error} // 'ok') . ')');
($r) = $h->read_file($id, 'a' x 4097);
is($r->{error}, 'bad_path', 'path over 4096 bytes: bad_path');
($r) = $h->read_file($id, 'a' x 256);
is($r->{error}, 'bad_path', 'component over 255 bytes: bad_path');
ok($h->ping->{ok}, 'helper alive');

# --- seccomp on every thread and child ---------------------------------------
($e, $out) = $h->exec($id, ['python3', '-c', <<'PY']);
import glob, os, threading, time, subprocess
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(4)]
[t.start() for t in ts]
for st in glob.glob('/proc/self/task/*/status'):
    for l in open(st):
        if l.startswith('Seccomp:') or l.startswith('NoNewPrivs:'):
            print(l.split()[0], l.split()[1])
ev.set(); [t.join() for t in ts]
print(subprocess.run(['sh', '-c', 'exec grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status'],
      capture_output=True, text=True).stdout, end='')
PY
my @lines = split /\n/, $out // '';
is(scalar(grep { /^Seccomp:\s+2$/ } @lines), 6, 'seccomp filter on 5 threads and an exec\'d grandchild')
    or diag $out;
is(scalar(grep { /^NoNewPrivs:\s+1$/ } @lines), 6, 'no_new_privs on each of them');

# --- memory: tmpfs writes count against the sandbox -------------------------
my $idm = $h->create_ok(limits => { memory_mb => 64, disk_mb => 256 });
($e) = $h->sh($idm, 'head -c 150M /dev/zero > /tmp/fill; echo rc=$?');
ok($e->{ok} && ($e->{oom_killed} || ($e->{exit_code} // 0) != 0),
   '150 MiB written to /tmp with memory_mb 64 does not fit') or diag explain $e;
ok(($e->{usage}{peak_memory_bytes} // 0) <= 70 * 1024 * 1024,
   'peak memory stayed within the limit');

is($h->destroy($id)->{state}, 'terminated', 'destroy');
# files holding its whole memory end the sandbox (killed_by_limit, issue
# 11) once the helper sees it; a destroy before that terminates it
# (while the helper is ending it, a destroy answers busy: asked again)
my $dm;
eventually('a destroy is answered other than busy', 10, sub {
    $dm = $h->destroy($idm);
    ($dm->{error} // '') ne 'busy';
});
ok(($dm->{state} // '') eq 'terminated'
   || (($dm->{error} // '') eq 'ended'
       && ($dm->{end_reason} // '') eq 'killed_by_limit'),
   'the filled sandbox: destroyed, or already ended by its memory limit')
    or diag explain $dm;
$h->leaks_ok('after destroy');
$h->stop;
done_testing;
