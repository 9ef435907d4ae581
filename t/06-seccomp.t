# The seccomp filter: each refused syscall answers EPERM, called directly
# with syscall(2) from a small program built on the host.
use strict;
use warnings;
use Test::More;
use File::Temp qw(tempdir);
use lib 't/lib';
use VetoTest;

my $src = <<'C';
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

static void
report(const char *name, long rc)
{
    printf("%s=%d\n", name, rc == -1 ? errno : 0);
}

int
main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "x32") == 0) {
        /* getpid through the x32 ABI: must not run. */
        long rc = syscall(0x40000000L | SYS_getpid);
        printf("x32=%ld errno=%d\n", rc, rc == -1 ? errno : 0);
        return 0;
    }
    errno = 0; report("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0L, NULL));
    errno = 0; report("umount2", syscall(SYS_umount2, "/tmp", 0L));
    errno = 0; report("ptrace", syscall(SYS_ptrace, (long) PTRACE_TRACEME, 0L, 0L, 0L));
    errno = 0; report("unshare_user", syscall(SYS_unshare, (long) CLONE_NEWUSER));
    errno = 0; report("unshare_net", syscall(SYS_unshare, (long) CLONE_NEWNET));
    errno = 0; report("keyctl", syscall(SYS_keyctl, 0L /* GET_KEYRING_ID */, -3L, 0L));
    errno = 0; report("add_key", syscall(SYS_add_key, "user", "k", "v", 1L, -3L));
    errno = 0; report("bpf", syscall(SYS_bpf, 0L /* MAP_CREATE */, NULL, 0L));
    errno = 0; report("chroot", syscall(SYS_chroot, "/tmp"));
    errno = 0; report("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
    errno = 0; report("setns", syscall(SYS_setns, 0L, 0L));
    errno = 0; report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0L, -1L, -1L, 0L));
    errno = 0; report("userfaultfd", syscall(SYS_userfaultfd, 0L));
    errno = 0; report("init_module", syscall(SYS_init_module, NULL, 0L, ""));
    errno = 0; report("kexec_load", syscall(SYS_kexec_load, 0L, 0L, NULL, 0L));
    errno = 0; report("open_by_handle_at", syscall(SYS_open_by_handle_at, -1L, NULL, 0L));
    errno = 0; report("clone_newuser", syscall(SYS_clone, (long) (CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L, 0L));
    /* socket families beyond unix, inet, inet6, netlink (AF_PACKET,
     * AF_XDP: EPERM without the filter, for lack of CAP_NET_RAW) */
    errno = 0; report("af_packet", syscall(SYS_socket, 17L, 2L, 0L));
    errno = 0; report("af_xdp", syscall(SYS_socket, 44L, 3L, 0L));
    errno = 0; report("af_alg", syscall(SYS_socket, 38L, 5L, 0L));
    errno = 0; report("af_vsock", syscall(SYS_socket, 40L, 1L, 0L));
    errno = 0; report("af_rds_pair", syscall(SYS_socketpair, 21L, 5L, 0L, NULL));
    errno = 0; report("af_inet", syscall(SYS_socket, 2L, 1L, 0L) >= 0 ? 0 : -1);
    errno = 0; report("af_netlink", syscall(SYS_socket, 16L, 2L, 0L) >= 0 ? 0 : -1);
    /* positive control: ordinary calls still work */
    errno = 0; report("getpid", syscall(SYS_getpid) > 0 ? 0 : -1);
    return 0;
}
C

my $tmp = tempdir(CLEANUP => 1);
open(my $fh, '>', "$tmp/probe.c") or die "write probe.c: $!";
print $fh $src;
close $fh;
my $cc = system('gcc', '-O0', '-static', '-o', "$tmp/probe", "$tmp/probe.c");
is($cc, 0, 'probe compiles on the host');
open($fh, '<:raw', "$tmp/probe") or die "read probe: $!";
my $bin = do { local $/; <$fh> };
close $fh;

my $h = VetoTest->start;
my $id = $h->create_ok;
my $r = $h->write_file($id, 'probe', $bin, mode => 0755);
ok($r->{ok}, 'probe written into the workspace') or diag explain $r;

my ($e, $out, $err) = $h->exec($id, ['/workspace/probe']);
ok($e->{ok}, 'probe ran') or diag explain $e;
is($e->{exit_code}, 0, 'probe exited 0') or diag "$out\n$err";
my %res = ($out // '') =~ /^(\w+)=(\d+)$/mg;
for my $sc (qw(mount umount2 ptrace unshare_user unshare_net keyctl add_key
               bpf chroot pivot_root setns perf_event_open userfaultfd
               init_module kexec_load open_by_handle_at clone_newuser)) {
    is($res{$sc}, 1, "$sc refused with EPERM");
}
is($res{getpid}, 0, 'getpid still works (filter is not deny-all)');
for my $af (qw(af_packet af_xdp af_alg af_rds_pair)) {
    is($res{$af}, 97, "$af refused with EAFNOSUPPORT (no module autoload)");
}
ok($res{af_vsock} == 1 || $res{af_vsock} == 97, 'af_vsock refused');
is($res{af_inet}, 0, 'AF_INET sockets still work');
is($res{af_netlink}, 0, 'AF_NETLINK sockets still work');

# Same checks as root inside the sandbox's user namespace are not
# possible (workloads never run as inside-root); the x32 ABI must be
# refused too (killed by SIGSYS or refused, never executed).
($e, $out, $err) = $h->exec($id, ['/workspace/probe', 'x32']);
ok($e->{ok}, 'x32 probe replied');
ok(($e->{signal} // 0) == 31 || ($out // '') =~ /x32=-1 errno=(1|38)/,
   'x32 syscall not executed (SIGSYS or EPERM/ENOSYS)')
    or diag explain [$e, $out];

# Ordinary work under the filter: fork, threads, pipes, sockets on lo.
($e, $out) = $h->sh($id, 'echo a | cat | tr a b; perl -e "print fork() >= 0 ? qq(forked\n) : qq(no\n)"');
like($out, qr/^b\nforked\n/m, 'fork, pipes and exec work under the filter');

is($h->destroy($id)->{state}, 'terminated', 'destroy');
$h->leaks_ok('after destroy');
$h->stop;
done_testing;
