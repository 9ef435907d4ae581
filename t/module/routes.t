#!/usr/bin/perl
# The op table's routes: every path answers 405 with exactly the methods
# its rows take; the public row needs no token and only for its methods;
# a path matches a row whole, so a URI that merely starts like one (the
# old prefix router took "/v1/healthsandboxes" for "/v1/sandboxes" and
# "/v1/sandboxes/{id}/files/exec" for an exec) is no such resource, and
# never reaches the helper.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
$n->start_helper;
$n->start;

my $t = $n->token(scope => 'sandbox:create sandbox:exec sandbox:files '
                           . 'approvals:review audit:read');
my $sb = 'sb-' . ('0' x 24);
my $apr = 'apr_' . ('0' x 32);
my $ex = 'ex-' . ('0' x 16);

sub is_problem
{
    my ($name, $st, $h, $want) = @_;
    is($st, $want, "$name: $want");
    like($h->{'content-type'} // '', qr{^application/problem\+json},
         "$name: problem+json");
}

# ---- 405: Allow names exactly the methods of the path's rows, in order
my @allow = (
    [PUT    => '/v1/health',                 'GET, HEAD'],
    [POST   => '/v1/openapi.json',           'GET, HEAD'],
    [POST   => '/v1/about',                  'GET, HEAD'],
    [PUT    => '/v1/profiles',               'GET, HEAD'],
    [PUT    => '/v1/sandboxes',              'GET, HEAD, POST'],
    [POST   => "/v1/sandboxes/$sb",          'GET, HEAD, PATCH, DELETE'],
    [DELETE => "/v1/sandboxes/$sb/files",    'GET, HEAD, PUT'],
    [PUT    => "/v1/sandboxes/$sb/usage",    'GET, HEAD'],
    [GET    => "/v1/sandboxes/$sb/exec",     'POST'],
    [POST   => "/v1/sandboxes/$sb/archive",  'GET, PUT'],
    [POST   => "/v1/sandboxes/$sb/execs/$ex", 'GET, HEAD, DELETE'],
    [POST   => "/v1/sandboxes/$sb/execs/$ex/output", 'GET'],
    [POST   => '/v1/approvals',              'GET, HEAD'],
    [DELETE => "/v1/approvals/$apr",         'GET, HEAD'],
    [GET    => "/v1/approvals/$apr/approve", 'POST'],
    [GET    => "/v1/approvals/$apr/deny",    'POST'],
    [POST   => '/v1/audit',                  'GET, HEAD'],
    [PUT    => '/v1/admin/revocations',      'POST'],
    [POST   => '/v1/admin/revocations/jti/x', 'GET, HEAD, DELETE'],
    [PUT    => '/v1/admin/revocations/agent/a/b', 'GET, HEAD, DELETE'],
    [POST   => '/v1/admin/sandboxes',        'GET, HEAD'],
    [GET    => "/v1/admin/sandboxes/$sb",    'DELETE'],
    [GET    => "/v1/sandboxes/$sb/snapshots", 'POST'],
    [POST   => '/v1/snapshots',              'GET, HEAD'],
    [POST   => '/v1/snapshots/snap-' . ('0' x 24), 'GET, HEAD, DELETE'],
    [GET    => "/v1/sandboxes/$sb/pause",    'POST'],
    [GET    => "/v1/sandboxes/$sb/resume",   'POST'],
    [POST   => "/v1/sandboxes/$sb/changes",  'GET'],
);
for my $c (@allow) {
    my ($m, $path, $want) = @$c;
    my ($st, $h) = $n->request($m => $path, $t);
    is_problem("$m $path", $st, $h, 405);
    is($h->{allow}, $want, "$m $path: Allow: $want");
}

# ---- the public row: no token for GET and HEAD only
{
    my ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
    is($st, 200, 'GET /v1/health without a token: 200');
    is($j->{status}, 'ok', 'and it is the helper ping');
    ($st) = $n->request(HEAD => '/v1/health');
    is($st, 200, 'HEAD /v1/health without a token: 200');
    ($st, $h) = $n->request(POST => '/v1/health');
    is_problem('POST /v1/health without a token', $st, $h, 401);
    ($st, $h) = $n->request(GET => '/v1/health/');
    is_problem('GET /v1/health/ without a token', $st, $h, 401);
    ($st, $h) = $n->request(GET => '/v1/healthz');
    is_problem('GET /v1/healthz without a token', $st, $h, 401);

    ($st, $h) = $n->request(GET => '/v1/openapi.json');
    is($st, 200, 'GET /v1/openapi.json without a token: 200');
    ($st) = $n->request(HEAD => '/v1/openapi.json');
    is($st, 200, 'HEAD /v1/openapi.json without a token: 200');
    ($st, $h) = $n->request(PUT => '/v1/openapi.json');
    is_problem('PUT /v1/openapi.json without a token', $st, $h, 401);
    ($st, $h) = $n->request(GET => '/v1/openapi.jsonx');
    is_problem('GET /v1/openapi.jsonx without a token', $st, $h, 401);
}

# ---- a path matches a row whole, or names nothing
my @nothing = (
    [GET  => '/v1/healthsandboxes'],
    [GET  => '/v1/auditsandboxes'],
    [GET  => '/v1/healthaudit'],
    [GET  => '/v1/healthapprovals'],
    [GET  => "/v1/healthsandboxes/$sb"],
    [POST => "/v1/sandboxes/$sb/files/exec"],
    [GET  => "/v1/sandboxes/$sb/files/exec"],
    [GET  => "/v1/sandboxes/$sb/filesexec"],
    [GET  => '/v1/sandboxes/'],
    [GET  => "/v1/sandboxes/$sb/"],
    [GET  => "/v1/sandboxes/${sb}0"],
    [GET  => '/v1/sandboxes/sb-XYZ'],
    [GET  => "/v1/sandboxes/$sb/execs"],
    [GET  => "/v1/sandboxes/$sb/execs/"],
    [GET  => "/v1/sandboxes/$sb/execs/ex-XYZ"],
    [GET  => "/v1/sandboxes/$sb/execs/ex-" . ('0' x 15)],
    [GET  => "/v1/sandboxes/$sb/execs/ex-" . ('A' x 16)],
    [GET  => "/v1/sandboxes/$sb/execs/${ex}0"],
    [GET  => "/v1/sandboxes/$sb/execs/$ex/outputs"],
    [GET  => "/v1/sandboxes/$sb/archives"],
    [GET  => '/v1/snapshots/'],
    [GET  => '/v1/snapshots/snap-XYZ'],
    [GET  => '/v1/snapshots/snap-' . ('A' x 24)],
    [GET  => '/v1/snapshots/snap-' . ('0' x 25)],
    [GET  => '/v1/snapshots/snap-' . ('0' x 24) . '/x'],
    [GET  => "/v1/sandboxes/$sb/changes/x"],
    [GET  => '/v1/audit/'],
    [GET  => '/v1/approvals/'],
    [GET  => "/v1/approvals/${apr}0"],
    [POST => "/v1/approvals/$apr/approvedeny"],
    [POST => "/v1/approvals/$apr/approve/deny"],
    [GET  => '/v1/'],
    [GET  => '/v1'],
);
for my $c (@nothing) {
    my ($m, $path) = @$c;
    my ($st, $h, $b, $j) = $n->request($m => $path, $t,
                                       $m eq 'POST' ? { argv => ['true'] }
                                                    : undef);
    is_problem("$m $path", $st, $h, 404);
    is($j->{detail} // '', 'no such resource', "$m $path: no such resource");
    ok(!exists $h->{allow}, "$m $path: no Allow");
}

# none of them reached the helper as an op
{
    my ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $t);
    is($st, 200, 'the real list still answers');
    is_deeply($j->{sandboxes}, [], 'and nothing was created by an alias');
}

unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
