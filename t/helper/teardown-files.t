# Termination of a sandbox whose files resist: 100,000 files and a
# directory tree deeper than PATH_MAX many times over, which destroy must
# remove (its unmount frees every inode) and confirm.  Split from
# t/helper/teardown.t: this is tmpfs work, not cgroup work, and an emulated
# CPU (the cgroup v2 VM, which runs t/helper/teardown.t) needs minutes for the
# files.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time);
use lib 't/lib';
use VetoTest;

my $h = VetoTest->start;

# 512 MiB: 131,072 inodes (nr_inodes is 256 per MiB of disk_mb)
my $idx = $h->create_ok(limits => { disk_mb => 512, memory_mb => 512 });
my ($e, $out, $err) = $h->exec($idx, ['python3', '-c', <<'PY'], timeout_s => 50);
import os
os.mkdir('/workspace/many')
for i in range(100000):
    open('/workspace/many/f%06d' % i, 'w').close()
os.chdir('/tmp')
depth = 0
try:
    while depth < 3000:
        os.mkdir('d' * 200)
        os.chdir('d' * 200)
        depth += 1
except OSError as e:
    pass
print(len(os.listdir('/workspace/many')), depth)
PY
like($out // '', qr/^100000 (\d+)$/, '100,000 files and a deep tree made') or diag explain [$e, $err];
my ($depth) = ($out // '') =~ / (\d+)$/;
ok(($depth // 0) * 201 > 65536, 'the tree is deeper than PATH_MAX many times over');
my $t0 = time;
my $d = $h->destroy($idx);
is($d->{state}, 'terminated', 'destroy with 100,000 files and a deep tree') or diag explain $d;
ok(time - $t0 < 20, sprintf('in %.1f s', time - $t0));

$h->leaks_ok('after destroy');
is($h->stop, 0, 'helper exits 0');
done_testing;
