# One tenant must not stall the helper: destroying a sandbox that holds
# a very large tree (its unmount frees every inode) runs off the event
# loop, so other peers are answered while the destroy is still running,
# and the destroy answers only once its files are confirmed gone.  The
# number of files a sandbox can make is bounded by its disk (nr_inodes).
use strict;
use warnings;
use Test::More;
use IO::Select;
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoTest;

my $FILES = 400_000;

my $h = VetoTest->start(max_disk_mb => 2048, max_memory_mb => 1024);

# --- nr_inodes follows disk_mb --------------------------------------------
my $small = $h->create_ok(limits => { disk_mb => 16 });
my ($e, $out, $err) = $h->sh($small, 'stat -f -c %c /workspace');
is($out, "4096\n", 'a 16 MiB disk has 4096 inodes (256 per MiB)')
    or diag explain [$e, $err];
($e, $out, $err) = $h->sh($small,
    'mkdir /workspace/m && cd /workspace/m && seq 1 5000 | xargs touch; '
    . 'echo rc=$?; ls | wc -l', timeout_s => 30);
like($out, qr/^rc=\d+\n(\d+)\n\z/, 'making 5000 files ran') or diag $err;
my ($made) = ($out // '') =~ /\n(\d+)\n\z/;
ok(defined $made && $made > 3000 && $made < 4096,
   "the inode limit stopped it at $made files");
like($err // '', qr/No space left on device/, 'with ENOSPC');
($e, $out) = $h->sh($small, 'rm -rf /workspace/m && echo ok');
is($out, "ok\n", 'the sandbox works on after hitting the limit');
is($h->destroy($small)->{state}, 'terminated', 'small sandbox destroyed');

# --- a big tree ------------------------------------------------------------
my $id = $h->create_ok(limits => { disk_mb => 2048, memory_mb => 1024 });
($e, $out, $err) = $h->sh($id,
    "mkdir /workspace/t && cd /workspace/t && seq 1 $FILES | xargs touch "
    . '&& ls -f | wc -l', timeout_s => 60, wait => 120);
is($out, ($FILES + 2) . "\n", "$FILES empty files made")
    or diag explain [$e, $err];

my $other = $h->create_ok;
my $dir = $h->state_dir . "/sb/$id";
ok(-d $dir, 'its directory exists before destroy');

# Destroy on one connection; once the helper has begun (its processes are
# gone within a poll or two), ping and status on others.  A helper that
# unmounted on its event loop would answer them only after the destroy.
my $ds = $h->connect;
VetoTest::write_all($ds, VetoTest::frame({ op => 'destroy', tenant => 't1',
                                           agent => 'a1', id => $id }))
    or die "send destroy: $!";
my $t0 = time;
sleep 0.15;    # on purpose: the destroy is under way

my $sel = IO::Select->new($ds);
my ($pings, $early) = (0, 0);
my ($p, $st);
for my $i (1 .. 20) {
    ($p) = $h->call({ op => 'ping' }, undef, timeout => 10);
    last unless $p->{ok};
    $pings++;
    my $pending = !$sel->can_read(0);
    $early++ if $pending;
    last unless $pending;
    sleep 0.02;
}
ok($pings >= 1, 'ping answered during the destroy');
ok($early >= 1, "$early ping(s) answered while the destroy was still pending")
    or diag(sprintf('destroy replied before the first ping (%.2f s)',
                    time - $t0));

# status of the sandbox being destroyed, and of another tenant's sandbox
($st) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                   id => $other }, undef, timeout => 10);
is($st->{sandbox}{state}, 'ready', 'status of another sandbox answered');

my ($d) = VetoTest::recv_frame($ds, 60);
my $dt = time - $t0;
ok($d && $d->{ok}, sprintf('destroy answered (%.2f s)', $dt))
    or diag explain $d;
is($d->{state}, 'terminated', 'terminated');
ok($d->{confirmed}{$_}, "$_ confirmed") for qw(processes cgroups network mounts files);
ok(!-e $dir, 'its directory is gone when the reply comes');
is(scalar(VetoTest::mounts_under($dir)), 0, 'and nothing is mounted there');
diag(sprintf("destroy of %d files took %.2f s; %d ping(s) answered meanwhile",
             $FILES, $dt, $early));

is($h->destroy($other)->{state}, 'terminated', 'other sandbox destroyed');
$h->leaks_ok('after destroy');
is($h->stop, 0, 'helper exits 0');
done_testing;
