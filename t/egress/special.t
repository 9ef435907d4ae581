#!/usr/bin/perl
# The proxy classifies every address it would dial, after resolution and
# for IP literals in any spelling, and refuses the special ranges; DNS
# rebinding cannot win because the address dialled is the address checked.
# The proxy runs in a namespace whose every route leads into a trap that
# counts packets to any address but the test hosts: a refused address that
# was dialled anyway would show there (and could not leave the machine).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use VetoEgress;

my %special = (
    'loop4'     => ['127.0.0.1', 'loopback'],
    'zero'      => ['0.1.2.3', 'this-network'],
    'priv10'    => ['10.1.2.3', 'private'],
    'priv172'   => ['172.16.5.4', 'private'],
    'priv192'   => ['192.168.1.1', 'private'],
    'cgnat'     => ['100.64.1.1', 'cgnat'],
    'metadata'  => ['169.254.169.254', 'link-local'],
    'mcast'     => ['224.0.0.251', 'multicast'],
    'reserved'  => ['240.0.0.1', 'reserved'],
    'bcast'     => ['255.255.255.255', 'reserved'],
    'ietf'      => ['192.0.0.8', 'ietf-protocol'],
    'doc1'      => ['192.0.2.10', 'documentation'],
    'doc2'      => ['198.51.100.1', 'documentation'],
    'doc3'      => ['203.0.113.9', 'documentation'],
    'bench'     => ['198.18.5.5', 'benchmark'],
    'loop6'     => ['::1', 'loopback'],
    'unspec6'   => ['::', 'unspecified'],
    'ula'       => ['fd00::1', 'unique-local'],
    'll6'       => ['fe80::1', 'link-local'],
    'site6'     => ['fec0::1', 'site-local'],
    'mcast6'    => ['ff02::1', 'multicast'],
    'mapped'    => ['::ffff:127.0.0.1', 'ipv4-mapped'],
    'mapped10'  => ['::ffff:10.0.0.1', 'ipv4-mapped'],
    'compat'    => ['::a00:1', 'ipv4-compatible'],
    'nat64'     => ['64:ff9b::a00:1', 'nat64'],
    'nat64l'    => ['64:ff9b:1::a00:1', 'nat64'],
    'sixtofour' => ['2002:a00:1::1', '6to4'],
    'teredo'    => ['2001::1', 'teredo'],
    'doc6'      => ['2001:db8::1', 'documentation'],
    'orchid'    => ['2001:20::1', 'ietf-protocol'],
    'discard'   => ['100::1', 'discard'],
    'resv6'     => ['4000::1', 'reserved'],
);

my $e = VetoEgress->start(
    names => [map { "$_.example.test=$special{$_}[0]" } sort keys %special]);
my ($rc, $out) = $e->setup_sandbox(
    allow => ['*.example.test', '127.0.0.1:443', '10.0.0.1:443',
              '169.254.169.254:443', '[::1]:443', '[::ffff:127.0.0.1]:443',
              "$e->{reg_ip}:80", '1.2.3.4:443']);
is($rc, 0, 'sandbox set up') or diag($out);
my %env = $e->proxy_env;

# names resolving to each special range: refused, before any connection
for my $n (sort keys %special) {
    my ($addr, $range) = @{ $special{$n} };
    ($rc, $out) = $e->in_sandbox("curl -sS -i -m 10 http://$n.example.test/", %env);
    like($out, qr{^HTTP/1.1 403.*blocked by Veto Sandbox egress policy: \Q$n\E.example.test:80 is not allowed.*is \Q$range\E}s,
        "$n.example.test -> $addr: refused ($range)");
}

# a name with one good and one private address: only the good one dialled
($rc, $out) = $e->in_sandbox('curl -sS -m 10 http://both.example.test/b', %env);
like($out, qr/registry-ok http both.example.test/, 'mixed answer: the global-or-allowed address serves');

# the host's own address is refused even inside an operator range
($rc, $out) = $e->in_sandbox('curl -sS -i -m 10 http://self.example.test/', %env);
like($out, qr/one of the host's own addresses/, "the proxy host's own address: refused");

# IP literals, odd spellings: the proxy reads them as inet_aton/WHATWG do,
# so the allowlist's 127.0.0.1:443 matches, and the classifier refuses
my @odd = (
    ['2130706433', 'loopback'], ['0x7f000001', 'loopback'],
    ['017700000001', 'loopback'], ['127.1', 'loopback'],
    ['0x7f.0.0.1', 'loopback'], ['0177.0.0.1', 'loopback'],
    ['127.0.0.1.', 'loopback'], ['127.000.000.001', 'loopback'],
    ['0x0a000001', 'private'], ['10.0.1', 'private'], ['167772161', 'private'],
    ['2852039166', 'link-local'], ['0xa9.0xfe.0xa9.0xfe', 'link-local'],
    ['[::1]', 'loopback'], ['[0:0:0:0:0:0:0:1]', 'loopback'],
    ['[::ffff:7f00:1]', 'ipv4-mapped'], ['[::ffff:127.0.0.1]', 'ipv4-mapped'],
);
for my $o (@odd) {
    my ($h, $range) = @$o;
    ($rc, $out) = $e->in_sandbox(qq{python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT $h:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
d = b""
while True:
    b = s.recv(4096)
    if not b: break
    d += b
print(d.decode(errors="replace"))
'});
    like($out, qr{^HTTP/1.1 403.*is \Q$range\E}s, "CONNECT $h:443: refused ($range)");
}

# not valid literals, and not names either: refused as malformed
for my $h ('1.2.3.256', '08.1.2.3', '0x1g.1.1.1', '1.2.3.4.5', '[::1%lo]') {
    ($rc, $out) = $e->in_sandbox(qq{python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT $h:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
print(s.recv(4096).decode(errors="replace"))
'});
    like($out, qr{^HTTP/1.1 400}, "CONNECT $h:443: malformed, 400");
}

# an allowed literal in an operator range works
($rc, $out) = $e->in_sandbox("curl -sS -m 10 http://$e->{reg_ip}/lit", %env);
like($out, qr/registry-ok http \Q$e->{reg_ip}\E \/lit/, 'allowed literal in an operator range: served');

# DNS rebinding: the resolver answers the registry first, then a private
# address; the second request is refused and the private address never
# dialled
($rc, $out) = $e->in_sandbox('curl -sS -m 10 http://rebind.example.test/one', %env);
like($out, qr/registry-ok http rebind.example.test \/one/, 'rebinding name: first answer served');
($rc, $out) = $e->in_sandbox('curl -sS -i -m 10 http://rebind.example.test/two', %env);
like($out, qr/is not allowed.*10\.66\.0\.9 is private/s, 'rebinding name: private answer refused');
($rc, $out) = $e->in_sandbox('curl -sS -i -m 10 --resolve rebind.example.test:80:198.18.0.1 http://rebind.example.test/three');
like($out, qr/10\.66\.0\.9 is private/, 'and transparently too (the sandbox never sees real addresses)');

my @r = $e->records;
my @reb = grep { $_->{host} eq 'rebind.example.test' } @r;
is($reb[0]{address}, $e->{reg_ip}, 'record: first rebinding attempt dialled the registry');
is($reb[1]{decision}, 'refused', 'record: second refused');
is($reb[1]{address}, '10.66.0.9', 'record names the refused address');
my @dialled_special = grep { ($_->{address} // '') =~ /^(10\.|127\.|169\.254|fd|fe80|::)/
                             && $_->{decision} eq 'allowed' } @r;
is(scalar @dialled_special, 0, 'no record of a special address dialled');
my ($both) = grep { $_->{host} eq 'both.example.test' } @r;
is($both->{address}, $e->{reg_ip}, 'mixed answer: the registry address was dialled');

is($e->trapped, 0, 'trap: not one packet to any refused address');
$e->finish;
done_testing;
