# scripts/build-debian-base.sh: a Debian base from the Debian archive (no
# registry) into an OCI layout, cached by package list, that the store
# imports with its os-release and tool versions recorded.  A small set
# (the essential variant) keeps CI time down; the cache lives in
# /var/tmp/veto-sandbox-bases unless VSB_BASE_CACHE says otherwise.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoImage;

my $s = VetoImage->new;
my $script = "$VetoImage::ROOT/scripts/build-debian-base.sh";

sub build
{
    my $out = `'$script' -v essential 2>'$s->{work}/build.err'`;
    return ($? >> 8, $out, $s->read_file("$s->{work}/build.err") // '');
}

my ($rc, $out, $err) = build();
is($rc, 0, 'build-debian-base.sh builds the essential variant')
    or diag $err;
my ($dir, $digest) = split ' ', $out // '';
like($digest // '', qr/^sha256:[0-9a-f]{64}$/, 'it prints the digest');
ok(-f "$dir/index.json" && -f "$dir/oci-layout", 'an OCI layout');

# cached: a second run builds nothing and names the same image
($rc, $out, $err) = build();
is($rc, 0, 'second run exits 0');
like($err, qr/cached/, 'second run: from the cache');
is((split ' ', $out)[1], $digest, 'second run: the same digest');

my ($irc, $meta, $ierr) = $s->import_json('--description',
                                          'Debian 12 essential', $dir,
                                          $digest);
is($irc, 0, 'the base imports') or diag $ierr;
is($meta->{os_release}{id}, 'debian', 'os-release: debian');
is($meta->{os_release}{version_id}, '12', 'os-release: 12');
like($meta->{tools}{bash} // '', qr/^5\./, 'tools: bash version recorded');
like($meta->{tools}{libc6} // '', qr/^2\.36/, 'tools: libc6 version recorded');
is($meta->{config}{working_dir}, '/workspace', 'config: working dir');

my $t = $s->tree($digest);
ok(-x "$t/usr/bin/bash", 'the tree has bash');
ok(-l "$t/bin" && readlink("$t/bin") eq 'usr/bin', 'merged /usr kept');
my @setid = split /\n/, `find '$t' -perm /6000`;
is_deeply(\@setid, [], 'no setuid or setgid bit (su, mount, ... dropped)');
ok($meta->{stats}{setid_dropped} >= 1, 'setuid bits were dropped: counted');
ok(-f "$t/etc/resolv.conf" && -s _ == 0, 'an empty resolv.conf mount point');
is_deeply([ $s->staging_entries ], [], 'staging is empty');

done_testing;
