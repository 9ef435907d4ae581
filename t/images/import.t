# The image store: an image built here with umoci init/new/insert (no
# registry) imports by digest into a root-owned tree with its marker,
# setuid dropped, the mount points a read-only root needs; the same from
# an OCI layout tarball; idempotent import, list, inspect, remove; tags
# refused; nothing left in staging.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoImage;
use JSON::PP;

my $s = VetoImage->new;

my $lay = $s->umoci_image({
    '/opt/marker'      => "veto image marker\n",
    '/usr/bin/suidbin' => [ "#!/bin/sh\necho hi\n", 06755 ],
    '/etc/motd'        => [ "welcome\n", 0600 ],
});
like($lay->{digest}, qr/^sha256:[0-9a-f]{64}$/, 'umoci made an image');

my ($rc, $meta, $err) = $s->import_json('--description', 'marker image',
                                        $lay->{dir}, $lay->{digest});
is($rc, 0, 'import exits 0') or diag $err;
like($err, qr/imported \Q$lay->{digest}\E/, 'import says what it imported');
is($meta->{digest}, $lay->{digest}, 'image.json: the digest');
is($meta->{manifest_digest}, $lay->{digest}, 'image.json: manifest digest');
like($meta->{config_digest} // '', qr/^sha256:[0-9a-f]{64}$/,
     'image.json: config digest');
is(scalar @{ $meta->{layers} // [] }, 3, 'image.json: three layers');
is($meta->{description}, 'marker image', 'image.json: description');
is($meta->{stats}{setid_dropped}, 1, 'one setuid/setgid mode dropped');
is($meta->{config}{architecture}, 'amd64', 'config summary kept')
    if `uname -m` =~ /x86_64/;

my $root = $s->tree($lay->{digest});
ok(-d $root, 'the tree is in the store');
is($s->read_file("$root/opt/marker"), "veto image marker\n",
   'the marker file is in the tree');

my @st = lstat("$root/opt/marker");
is($st[4], 0, 'marker owned by root');
is($st[2] & 07777, 0644, 'marker mode kept');
@st = lstat("$root/usr/bin/suidbin");
is($st[2] & 07777, 0755, 'setuid and setgid dropped, the rest kept');
@st = lstat("$root/etc/motd");
is($st[2] & 07777, 0600, 'a 0600 file stays 0600');

# read-only and root's: nobody but root reaches the store
for my $d ($s->store, "$s->{store}/sha256") {
    my @d = lstat($d);
    is($d[4], 0, "$d owned by root");
    is($d[2] & 07777, 0700, "$d mode 0700");
}
my $probe = "$root/opt/written-by-nobody";
my $w = system('setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
               'sh', '-c', "echo x 2>/dev/null > '$probe'");
ok($w != 0 && !-e $probe, 'an unprivileged user cannot write into the tree');
$w = system('setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
            'sh', '-c', "cat '$root/opt/marker' 2>/dev/null");
ok($w != 0, 'nor read it (the store is 0700 root)');

my @nonroot = grep { (lstat $_)[4] != 0 }
              split /\n/, `find '$root'`;
is_deeply(\@nonroot, [], 'every inode of this image is root-owned');
my @setid = split /\n/, `find '$root' -perm /6000`;
is_deeply(\@setid, [], 'no setuid or setgid bit anywhere');
my @special = split /\n/, `find '$root' ! -type f ! -type d ! -type l`;
is_deeply(\@special, [], 'only files, directories and symlinks');

# the mount points of a read-only root
for my $d (qw(dev proc sys tmp run etc workspace var/tmp home)) {
    ok(-d "$root/$d" && !-l "$root/$d", "/$d is a directory");
}
for my $f (qw(etc/resolv.conf etc/hosts etc/hostname)) {
    ok(-f "$root/$f" && !-l "$root/$f", "/$f is a file");
}
is((lstat "$root/tmp")[2] & 07777, 01777, '/tmp is 1777');

is_deeply([ $s->staging_entries ], [], 'staging is empty after an import');

# idempotent
($rc, undef, $err) = $s->ctl('import', $lay->{dir}, $lay->{digest});
is($rc, 0, 'importing again exits 0');
like($err, qr/already in the store/, '... and says it is already there');

# list, inspect
my ($out);
($rc, $out, $err) = $s->ctl('list');
is($rc, 0, 'list exits 0');
my $list = decode_json($out);
is(scalar @$list, 1, 'list has one image');
is($list->[0]{digest}, $lay->{digest}, 'list names its digest');
is($list->[0]{description}, 'marker image', 'list has the description');
($rc, $out) = $s->ctl('inspect', $lay->{digest});
is($rc, 0, 'inspect exits 0');
is(decode_json($out)->{stats}{setid_dropped}, 1, 'inspect: image.json');

# tags are refused, everywhere
for my $tag ('t', 'latest', 'debian:12', "$lay->{dir}:t", 'sha256:abc',
             'sha512:' . ('0' x 128), 'SHA256:' . ('A' x 64))
{
    ($rc, undef, $err) = $s->ctl('import', $lay->{dir}, $tag);
    is($rc, 1, "import '$tag' refused");
    like($err, qr/digest|tag/, "... with a reason naming digests");
}
($rc, undef, $err) = $s->ctl('inspect', 'latest');
like($err, qr/never by a tag/, 'inspect by tag refused');

# from a tarball of the layout (what skopeo copy oci-archive: makes)
my $lay2 = $s->umoci_image({ '/srv/other' => "second\n" });
my $tarball = "$s->{work}/layout.tar";
VetoImage::run('tar', '-C', $lay2->{dir}, '-cf', $tarball, '.');
($rc, $meta, $err) = $s->import_json($tarball, $lay2->{digest});
is($rc, 0, 'import from a layout tarball') or diag $err;
is($s->read_file($s->tree($lay2->{digest}) . '/srv/other'), "second\n",
   '... its file is there');
ok(!-e $s->tree($lay2->{digest}) . '/../layout', '... and no layout copy');

# gzip-compressed tarball too
my $lay3 = $s->umoci_image({ '/srv/third' => "third\n" });
VetoImage::run('tar', '-C', $lay3->{dir}, '-czf', "$tarball.gz", '.');
($rc, $meta, $err) = $s->import_json("$tarball.gz", $lay3->{digest});
is($rc, 0, 'import from a gzip layout tarball') or diag $err;

# an image index: the manifest for this machine is taken
my $idx = {
    schemaVersion => 2,
    mediaType => 'application/vnd.oci.image.index.v1+json',
    manifests => [
        { mediaType => 'application/vnd.oci.image.manifest.v1+json',
          digest => $lay3->{digest},
          size => -s $s->blob_path($lay3->{dir}, $lay3->{digest}),
          platform => { os => 'linux', architecture => 'amd64' } },
        { mediaType => 'application/vnd.oci.image.manifest.v1+json',
          digest => 'sha256:' . ('1' x 64), size => 10,
          platform => { os => 'linux', architecture => 'arm64' } },
    ],
};
my ($idigest) = $s->put_blob($lay3->{dir},
                             JSON::PP->new->canonical->encode($idx));
($rc, $meta, $err) = $s->import_json($lay3->{dir}, $idigest);
if (`uname -m` =~ /x86_64/) {
    is($rc, 0, 'import an index by its digest') or diag $err;
    is($meta->{digest}, $idigest, '... stored under the index digest');
    is($meta->{manifest_digest}, $lay3->{digest}, '... the amd64 manifest');
} else {
    # the test index names an amd64 manifest only: no image for this host
    isnt($rc, 0, 'an index with no manifest for this architecture is refused');
}

# remove
($rc, undef, $err) = $s->ctl('remove', $lay2->{digest});
is($rc, 0, 'remove exits 0') or diag $err;
ok(!-e $s->tree($lay2->{digest}), 'the tree is gone');
($rc, undef, $err) = $s->ctl('remove', $lay2->{digest});
is($rc, 1, 'removing again fails');
like($err, qr/not in the store/, '... not in the store');
is_deeply([ $s->staging_entries ], [], 'staging is empty after removal');
ok($s->sentinel_intact, 'nothing outside the store changed');

done_testing;
