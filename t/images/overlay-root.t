# The writable overlay root of an image profile (a Debian base built by
# scripts/build-debian-base.sh, cached): writes land in the sandbox's
# upper layer on its tmpfs and count against disk_mb (ENOSPC there, the
# image untouched); two sandboxes of one image never see each other's
# writes; each live sandbox holds the image (a shared lock the store's
# removal respects); 100 create/destroy cycles leave no overlay mount, no
# upper directory and no hold on the image.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoImage;
use VetoTest;
use Eventually qw(eventually);

my $s = VetoImage->new;
my $digest = $s->debian_profile_base;
my $tree = $s->tree($digest);
(my $hex = $digest) =~ s/^sha256://;

my $h = VetoTest->start(image_store => $s->store,
                        image_profile => [ "deb $digest" ],
                        max_disk_mb => 64);

# flock(2) holds of the helper on the image's directory (/proc/locks)
sub image_holds
{
    my $ino = (stat "$s->{store}/sha256/$hex")[1];
    open(my $fh, '<', '/proc/locks') or die "/proc/locks: $!";
    my $n = 0;
    while (<$fh>) {
        my @f = split ' ';
        next unless $f[1] eq 'FLOCK';
        my ($pid, $id) = ($f[4], $f[5]);
        $n++ if $id =~ /:(\d+)$/ && $1 == $ino && $pid == $h->pid;
    }
    return $n;
}

is(image_holds(), 0, 'no sandbox, no hold on the image');

my $a = $h->create_ok(profile => 'deb', limits => { disk_mb => 16 });
my $b = $h->create_ok(profile => 'deb');
is(image_holds(), 2, 'two sandboxes, two holds on the image');

my $upper_a = $h->state_dir . "/sb/$a/upper";
ok(-d $upper_a, 'the upper layer lives in the sandbox\'s directory');
my @m = grep { m{/sb/\Q$a\E/} } VetoTest::mounts_under($h->dir);
is_deeply(\@m, [ $h->state_dir . "/sb/$a/root" ],
          'one mount of the sandbox beside its tmpfs: the overlay root');

# writes land in the upper layer, copies of the image's files included
my ($x, $out, $err) = $h->sh($a, 'echo mine > /workspace/a.txt; '
    . 'echo home > ~/h.txt; echo t > /tmp/t.txt; '
    . 'cp /etc/os-release /workspace/os; echo ok');
is($out, "ok\n", 'the workload writes in its root') or diag $err;
ok(-f "$upper_a/workspace/a.txt", '/workspace/a.txt is in the upper layer');
ok(-f "$upper_a/home/sandbox/h.txt", '~/h.txt is in the upper layer');
ok(-f "$upper_a/tmp/t.txt", '/tmp/t.txt is in the upper layer');
ok(-f "$upper_a/etc/passwd" && -f "$upper_a/etc/hosts",
   'the helper\'s /etc additions are in the upper layer');
ok(!-e "$tree/workspace/a.txt" && !-e "$tree/home/sandbox",
   'nothing of it in the image\'s tree');
my @st = stat "$upper_a/workspace/a.txt";
my $root_uid = (stat $upper_a)[4];
ok($root_uid >= $h->uid_base && $root_uid < $h->uid_end,
   'the upper layer\'s root is the sandbox\'s root (a host uid of its range)');
is($st[4], $root_uid + 1000, 'written as the sandbox\'s uid 1000');

# B sees none of A's writes, and A none of B's
($x, $out) = $h->sh($b, 'ls /workspace ~ /tmp; echo theirs > /workspace/b');
is($out, "/home/sandbox:\n\n/tmp:\n\n/workspace:\n",
   'a second sandbox of the image sees none of the first\'s files');
($x, $out) = $h->sh($a, 'ls /workspace');
is($out, "a.txt\nos\n", 'and the first none of the second\'s');

# the disk limit holds over the whole root: ENOSPC at disk_mb
($x, $out, $err) = $h->sh($a, 'dd if=/dev/zero of=/workspace/big bs=1M '
    . 'count=64 2>&1; stat -c %s /workspace/big');
like($out, qr/No space left on device/, 'writing 64 MiB: ENOSPC');
my ($size) = $out =~ /(\d+)\s*\z/;
ok(defined $size && $size <= 16 * 1024 * 1024,
   'at most disk_mb (16 MiB) written') or diag $out;
($x, $out, $err) = $h->sh($a, 'echo more > /etc/more; '
    . 'echo x > /usr/local/x; echo done');
like("$err$out", qr{/etc/more: Permission denied.*/usr/local/x: Permission denied.*done}s,
     'the image\'s root-owned tree stays closed to the workload')
    or diag explain [ $x, $out, $err ];
my ($st) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                      id => $a });
ok($st->{sandbox}{usage}{disk_used_bytes} >= 15 * 1024 * 1024,
   'status: the upper layer\'s bytes count as the sandbox\'s disk use');
($x, $out) = $h->sh($a, 'rm /workspace/big; echo x > /workspace/after; '
    . 'echo ok');
is($out, "ok\n", 'space comes back when files go');

for my $id ($a, $b) {
    my $d = $h->destroy($id);
    is($d->{state}, 'terminated', "destroy $id: terminated")
        or diag explain $d;
}
ok(!-e $upper_a, 'the upper layer is gone with the sandbox');
is(image_holds(), 0, 'no hold on the image once both are destroyed');
$h->leaks_ok('after two image sandboxes');

# the helper killed with a live image sandbox: the next start unmounts
# the stale overlay with the rest of the sandbox's storage
my $k = $h->create_ok(profile => 'deb');
$h->sh($k, 'echo x > /workspace/x');
$h->kill9;
is(scalar(grep { m{/sb/\Q$k\E/root$} } VetoTest::mounts_under($h->dir)), 1,
   'killed helper: its sandbox\'s overlay is still mounted');
$h->launch;
eventually('no process of ours is left', 10, sub { !$h->count_procs });
is_deeply([ VetoTest::mounts_under($h->state_dir) ], [],
          'restarted helper: the stale overlay and tmpfs are unmounted');
ok(!-e $h->state_dir . "/sb/$k", 'and its directory removed');
is(image_holds(), 0, 'no hold on the image after the restart');
$h->leaks_ok('after kill -9 and restart');

# 100 cycles: no overlay mount, upper directory or hold left
my $failed = 0;
for my $i (1 .. 100) {
    my $c = $h->create(profile => 'deb');
    if (!$c->{ok}) {
        diag("cycle $i: create: $c->{error}: $c->{detail}");
        $failed++;
        last;
    }
    my $id = $c->{sandbox}{id};
    if ($i % 10 == 0) {
        my ($r, $o) = $h->sh($id, "echo ok > /workspace/x && cat /workspace/x");
        $failed++, diag("cycle $i: exec: " . explain $r) unless ($o // "") eq "ok\n";
    }
    my $d = $h->destroy($id);
    if (($d->{state} // '') ne 'terminated') {
        diag("cycle $i: destroy: " . explain $d);
        $failed++;
        last;
    }
}
is($failed, 0, '100 create/destroy cycles of the image profile');
my @left = VetoTest::mounts_under($h->state_dir);
is_deeply(\@left, [], 'no overlay mount left');
opendir(my $dh, $h->state_dir . '/sb') or die "opendir: $!";
my @dirs = grep { !/^\.\.?$/ } readdir $dh;
is_deeply(\@dirs, [], 'no sandbox directory (upper, work) left');
is(image_holds(), 0, 'no hold on the image left');
$h->leaks_ok('after 100 cycles');

my ($rrc, $rout, $rerr) = $s->ctl('remove', $digest);
is($rrc, 0, 'the store removes the image: nothing holds it') or diag $rerr;
is($h->stop, 0, 'helper stops cleanly');

done_testing;
