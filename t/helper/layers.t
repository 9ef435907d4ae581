# The isolation layers the helper's ping names (what GET /v1/about
# serves) are the ones in force, held against what this host really has:
# the namespaces a workload has of its own (its /proc/self/ns against
# ours), the cgroup version (how /sys/fs/cgroup is mounted, and the
# sandbox's memory limit in that hierarchy), the seccomp filter (the
# workload's /proc/self/status), the Landlock ABI (the kernel's own
# answer); the profiles in short agree with the profiles op, the ceilings
# and defaults with the configuration.  Runs in the cgroup v2 VM too
# (scripts/test-cgroup-v2-vm.sh runs the cgroup tests of t/helper/
# there with
# VETO_EXPECT_CGROUP=v2, so a VM that came up hybrid fails here).
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoTest;

my $h = VetoTest->start;
my $ping = $h->ping;
ok($ping->{ok}, 'ping') or diag explain $ping;

# ---- cgroup: the version of the hierarchy at /sys/fs/cgroup ------------

# cgroup2 at /sys/fs/cgroup has cgroup.controllers at its root; a hybrid
# or v1 host has a tmpfs there with a directory per v1 hierarchy
my $v2 = -e '/sys/fs/cgroup/cgroup.controllers';
is($ping->{cgroup}, $v2 ? 'v2' : 'v1',
   'ping: cgroup ' . ($v2 ? 'v2: /sys/fs/cgroup is cgroup2'
                          : 'v1: /sys/fs/cgroup holds v1 hierarchies'));
if (defined $ENV{VETO_EXPECT_CGROUP}) {
    is($ping->{cgroup}, $ENV{VETO_EXPECT_CGROUP},
       "ping: cgroup $ENV{VETO_EXPECT_CGROUP}, as this host must have");
}

my $c = $h->create(limits => { memory_mb => 96 });
ok($c->{ok}, 'create') or diag explain $c;
my $id = $c->{sandbox}{id};

my $mem_root = $v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/memory';
my ($cg) = split /\n/,
    `find $mem_root -maxdepth 10 -type d -name $id 2>/dev/null`;
ok($cg, "the sandbox's cgroup is in the $ping->{cgroup} hierarchy "
        . "($mem_root)");
my $file = $v2 ? 'memory.max' : 'memory.limit_in_bytes';
open(my $fh, '<', "$cg/$file") or die "read $cg/$file: $!";
my $limit = <$fh>;
close $fh;
chomp $limit;
is($limit, 96 * 1024 * 1024, "... with its memory limit in $file");

# ---- namespaces: those the workload does not share with us ------------

my %kname = (user => 'user', pid => 'pid', mnt => 'mount', net => 'network',
             ipc => 'ipc', uts => 'uts', cgroup => 'cgroup', time => 'time');
my %ours;
for my $k (keys %kname) {
    my $l = readlink("/proc/self/ns/$k");
    $ours{$k} = $l if defined $l;   # a kernel without time namespaces
}
my ($x, $out, $err) = $h->sh($id, 'for n in ' . join(' ', sort keys %ours)
    . '; do echo "$n $(readlink /proc/self/ns/$n)"; done; '
    . 'grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status');
my %theirs = $out =~ /^(\w+) (\S+:\[\d+\])$/mg;
is_deeply([ sort keys %theirs ], [ sort keys %ours ],
          'the workload reads each of its namespace links') or diag $out, $err;
my @own = sort map { $kname{$_} } grep { $theirs{$_} ne $ours{$_} } keys %ours;
is_deeply([ sort @{ $ping->{namespaces} // [] } ], \@own,
          'ping names exactly the namespaces a workload has of its own: '
          . join(',', @own));
is_deeply(\@own, [qw(cgroup ipc mount network pid user uts)],
          '... all seven, none shared with the host');

# ---- seccomp, Landlock ---------------------------------------------------

is($ping->{seccomp}, 'allowlist', 'ping: seccomp allowlist');
like($out, qr/^Seccomp:\s+2$/m, '... the workload runs under a filter');
like($out, qr/^NoNewPrivs:\s+1$/m, '... with no_new_privs');

# landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
my $kabi = syscall(444, 0, 0, 1);
$kabi = 0 if $kabi < 0;
is($ping->{landlock_abi}, $kabi > 7 ? 7 : $kabi,
   "ping: Landlock ABI (the kernel's: $kabi, used up to the reviewed 7)");

# ---- profiles in short, ceilings -----------------------------------------

my ($pr) = $h->call({ op => 'profiles' });
is_deeply($ping->{profiles},
          [ map { my $p = $_; +{ map { $_ => $p->{$_} }
                                 qw(name kind digest default available) } }
            @{ $pr->{profiles} } ],
          'ping: the profiles op\'s list, in short');
ok($ping->{profiles}[0]{default} && $ping->{profiles}[0]{available},
   '... the default first, available');

my %max = map { $_ => $h->cf("max_$_") }
          qw(memory_mb pids cpu_percent disk_mb timeout_s output_bytes);
my %def = map { $_ => $h->cf("default_$_") }
          qw(memory_mb pids cpu_percent disk_mb timeout_s output_bytes);
is_deeply($ping->{limits_max}, \%max, 'ping: limits_max, as configured');
is_deeply($ping->{limits_default}, \%def, 'ping: limits_default');

ok($h->destroy($id)->{ok}, 'destroy');
$h->leaks_ok('after the layers');
is($h->stop, 0, 'helper stops cleanly');

done_testing;
