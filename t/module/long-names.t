#!/usr/bin/perl
# A field name longer than the module's buffer for it comes back cut to
# that buffer, and nothing of the worker's memory after it.  Before the
# fix the cut name had no NUL, so the problem's "field" read on into the
# stack (found by t/fuzz/fuzz_module_parsers.c; the ASan module crashed).

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
$n->start_helper;
$n->start;

my $t = $n->token;
my $long = 'k' x 200;

for my $c (
    [ 'unknown field', '/v1/sandboxes', { $long => 1 },
      substr($long, 0, 63) ],
    [ 'unknown limit', '/v1/sandboxes', { limits => { $long => 1 } },
      'limits.' . substr($long, 0, 56) ],
    [ 'unknown exec field', '/v1/sandboxes/sb-' . ('0' x 24) . '/exec',
      { argv => ['true'], $long => 1 }, substr($long, 0, 63) ],
) {
    my ($name, $path, $body, $want) = @$c;
    my ($st, $h, $b, $j) = $n->request(POST => $path, $t, $body);
    is($st, 400, "$name: 400");
    ok(defined $j, "$name: the problem is JSON") or diag $b;
    like($j->{type} // '', qr/:unknown_field$/, "$name: unknown_field");
    is($j->{field}, $want, "$name: the name cut to the buffer, no more");
}

unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
