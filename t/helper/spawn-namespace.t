# The mount namespace an exec's init is cloned from (sandbox-helper/
# spawn_ns.c): a copy of the host's mounts that the sandboxes' own mounts
# (two per sandbox: its tmpfs, its pinned network namespace) never enter,
# so that an exec does not copy, walk and detach them all.  Each exec
# still gets its own sandbox's tree, where the host has it, and only its
# own; nothing of it is left on the host.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoTest;

# The host's own mounts: those outside /tmp and /var/tmp, where tests
# running beside this one make and remove theirs (t/helper/snapshots.t
# keeps its state on /var/tmp).
sub system_mounts
{
    open(my $fh, '<', '/proc/self/mountinfo') or die "mountinfo: $!";
    my $n = 0;
    while (<$fh>) {
        my $mp = (split / /)[4];
        $n++ unless $mp =~ m{^/(var/)?tmp/};
    }
    return $n;
}

my $h = VetoTest->start(max_sandboxes => 24);

my ($s) = $h->call({ op => 'stats' });
ok($s->{ok}, 'stats') or diag explain $s;
my $base = $s->{spawn_mounts};
like($base // '', qr/^\d+\z/, 'the helper has a spawn namespace');
cmp_ok($base, '>', 0, '... with the host\'s mounts in it');
cmp_ok($base, '>=', system_mounts(), '... every one of the host\'s own');

my @ids = map { $h->create_ok } 1 .. 20;
is($h->count_mounts, 40,
   '20 sandboxes: their tmpfs and network pins are host mounts');

# each exec sees its own sandbox's files, written before and by itself
for my $i (0, 10, 19) {
    my $id = $ids[$i];
    my ($w) = $h->write_file($id, 'mine.txt', "I am $i\n");
    ok($w->{ok}, "sandbox $i: file written") or diag explain $w;

    my ($e, $out) = $h->sh($id, 'cat mine.txt; echo "from exec $0" > out.txt');
    is($e->{exit_code}, 0, "sandbox $i: exec ran") or diag explain $e;
    is($out, "I am $i\n", "sandbox $i: the exec sees its own workspace");

    my ($r, $data) = $h->read_file($id, 'out.txt');
    is($data, "from exec /bin/sh\n",
       "sandbox $i: what the exec wrote is in the sandbox the host holds");
}

# and nothing of another sandbox: not its mounts, not its files
my ($e, $mi) = $h->sh($ids[5], 'cat /proc/self/mountinfo');
is($e->{exit_code}, 0, 'mountinfo read in a sandbox');
my @other = grep { $mi =~ /\Q$_\E/ } @ids;
is(scalar @other, 0, 'no sandbox id in a workload\'s mount table')
    or diag $mi;
($e) = $h->sh($ids[5], 'test ! -e mine.txt');
is($e->{exit_code}, 0, 'another sandbox\'s file is not in this one');

($s) = $h->call({ op => 'stats' });
is($s->{spawn_mounts}, $base,
   'the sandboxes\' mounts never entered the spawn namespace');

# execs at once across sandboxes: each attached tree is its own
my @socks = map { $h->connect } 0 .. 7;
for my $k (0 .. 7) {
    VetoTest::write_all($socks[$k], VetoTest::frame(
        { op => 'exec', tenant => 't1', agent => 'a1', id => $ids[$k],
          argv => ['/bin/sh', '-c', 'sleep 0.3; cat mine.txt 2>/dev/null'] }));
}
my $fine = 0;
for my $k (0 .. 7) {
    my ($r, $p) = VetoTest::recv_frame($socks[$k], 30);
    my (undef, $out) = VetoTest::split_output($r, $p);
    # only sandbox 0 of these 8 was given mine.txt
    my $want = ($k == 0) ? "I am 0\n" : '';
    $fine++ if $r && $r->{ok} && defined $out && $out eq $want;
}
is($fine, 8, '8 concurrent execs in 8 sandboxes, each in its own tree');

$h->destroy($_) for @ids;
is($h->count_mounts, 0,
   'destroyed: every sandbox mount is gone from the host');
$h->live_ok(0, 'after the destroys');

$h->stop;
done_testing;
