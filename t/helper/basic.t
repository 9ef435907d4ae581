# Life cycle: ping, create, status, list, exec, destroy; the reply shapes of
# vsb_protocol.h; ownership (another tenant or agent sees not_found).
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $h = VetoTest->start;

my $p = $h->ping;
ok($p->{ok}, 'ping ok') or diag explain $p;
is($p->{version}, 1, 'protocol version 1');
like($p->{cgroup} // '', qr/^v[12]$/, 'ping names the cgroup mode');
is($p->{sandboxes}, 0, 'no sandboxes yet');
like($p->{epoch} // '', qr/^[0-9a-f]{32}\z/, 'ping: epoch is 32 lowercase hex');
ok(abs(($p->{started_at} // 0) - time) < 120, 'ping: started_at is now-ish');
is($h->ping->{epoch}, $p->{epoch}, 'the epoch is stable within a run');
is($p->{limits_max}{timeout_s}, $h->cf('max_timeout_s'),
   'ping: limits_max names the timeout ceiling');
is($p->{limits_default}{output_bytes}, $h->cf('default_output_bytes'),
   'ping: limits_default names the defaults');

my ($r) = $h->call({ op => 'ping', request_id => 'req-42' });
is($r->{request_id}, 'req-42', 'request_id echoed');

# "brief": a liveness probe's ping, the same answers without the host's
# count, profiles and ceilings
($r) = $h->call({ op => 'ping', brief => JSON::PP::true });
ok($r->{ok}, 'brief ping ok') or diag explain $r;
is_deeply([ sort keys %$r ],
          [ sort qw(ok version cgroup epoch seccomp landlock_abi namespaces
                    started_at egress) ],
          'brief ping: no sandboxes, profiles, limits_max, limits_default');
is($r->{epoch}, $p->{epoch}, 'brief ping: the same epoch');
is_deeply($r->{namespaces}, $p->{namespaces}, 'brief ping: the same namespaces');
($r) = $h->call({ op => 'ping', brief => JSON::PP::false });
ok(exists $r->{profiles} && exists $r->{limits_max} && exists $r->{sandboxes},
   'ping with brief false: the full reply');
($r) = $h->call({ op => 'ping', brief => 1 });
is($r->{error}, 'bad_type', 'ping: brief must be true or false');
is($r->{field}, 'brief', 'ping: the error names brief');

$r = $h->create(limits => { memory_mb => 128, pids => 64 }, ttl_s => 300,
                metadata => { purpose => 'test' });
ok($r->{ok}, 'create ok') or diag explain $r;
my $sb = $r->{sandbox} // {};
my $id = $sb->{id} // '';
like($id, qr/^sb-[0-9a-f]{24}$/, 'sandbox id format');
is($sb->{epoch}, $p->{epoch}, "the sandbox carries its helper's epoch");
is($sb->{state}, 'ready', 'state ready');
is($sb->{tenant}, 't1', 'tenant');
is($sb->{agent}, 'a1', 'agent');
is($sb->{network}, 'none', 'network none by default');
is($sb->{limits}{memory_mb}, 128, 'memory_mb as requested');
is($sb->{limits}{pids}, 64, 'pids as requested');
is($sb->{limits}{disk_mb}, $h->cf('default_disk_mb'), 'disk_mb default');
is($sb->{limits}{timeout_s}, $h->cf('default_timeout_s'), 'timeout_s default');
is($sb->{limits}{output_bytes}, $h->cf('default_output_bytes'),
   'output_bytes default');
is($sb->{ttl_s}, 300, 'ttl_s as requested');
ok(($sb->{expires_at} // 0) - ($sb->{created_at} // 0) == 300,
   'expires_at = created_at + ttl_s');
is_deeply($sb->{metadata}, { purpose => 'test' }, 'metadata kept');

ok(-d $h->state_dir . "/sb/$id", 'sandbox directory exists on the host');
ok($h->count_mounts >= 1, 'sandbox tmpfs is mounted under the state dir');
ok($h->count_cgroups >= 1, 'sandbox cgroup exists');

($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $id });
ok($r->{ok}, 'status ok') or diag explain $r;
is($r->{sandbox}{id}, $id, 'status names the sandbox');
ok(ref $r->{sandbox}{usage} eq 'HASH', 'status carries usage');

($r) = $h->call({ op => 'list', tenant => 't1' });
ok($r->{ok} && grep({ $_->{id} eq $id } @{ $r->{sandboxes} // [] }),
   'list shows it');
($r) = $h->call({ op => 'list', tenant => 't2' });
ok($r->{ok}, 'list for another tenant ok');
is(scalar @{ $r->{sandboxes} // [1] }, 0, 'another tenant sees nothing');

# ownership: not_found exactly as for an unknown id
for my $who ([ 't2', 'a1' ], [ 't1', 'a2' ]) {
    ($r) = $h->call({ op => 'status', tenant => $who->[0],
                      agent => $who->[1], id => $id });
    is($r->{error}, 'not_found', "status as $who->[0]/$who->[1]: not_found");
    my ($e) = $h->exec($id, ['true'], tenant => $who->[0], agent => $who->[1]);
    is($e->{error}, 'not_found', "exec as $who->[0]/$who->[1]: not_found");
    ($r) = $h->call({ op => 'destroy', tenant => $who->[0],
                      agent => $who->[1], id => $id });
    is($r->{error}, 'not_found', "destroy as $who->[0]/$who->[1]: not_found");
}
($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                  id => 'sb-' . ('0' x 24) });
is($r->{error}, 'not_found', 'unknown id: not_found');

my ($e, $out, $err) = $h->exec($id, ['/bin/echo', 'hello', 'world']);
ok($e->{ok}, 'exec ok') or diag explain $e;
is($out, "hello world\n", 'stdout');
is($err, '', 'stderr empty');
is($e->{exit_code}, 0, 'exit 0');
ok(!defined $e->{signal}, 'signal null');
ok(!$e->{timed_out} && !$e->{oom_killed}, 'not timed out, not oom');
ok(defined $e->{usage}{wall_ms} && defined $e->{usage}{cpu_ms}
   && defined $e->{usage}{peak_memory_bytes} && defined $e->{usage}{peak_pids},
   'usage fields present');

($e, $out, $err) = $h->sh($id, 'cat; echo err >&2; id -u; pwd; echo "$FOO"; cat /proc/sys/kernel/hostname',
                          stdin => "in\x00put\n", env => { FOO => 'bar' });
ok($e->{ok}, 'exec with stdin/env ok');
is($out, "in\x00put\n1000\n/workspace\nbar\n" . "sandbox\n",
   'stdin passed through, uid 1000, cwd /workspace, env, hostname')
    or diag explain [$out, $err];
is($err, "err\n", 'stderr separate');

($e, $out) = $h->exec($id, ['pwd'], cwd => '/tmp');
is($out, "/tmp\n", 'cwd honoured');

($r) = $h->call({ op => 'ping' });
is($r->{sandboxes}, 1, 'ping counts one sandbox');

# the figures the gateway's metrics show
my ($s) = $h->call({ op => 'stats', request_id => 'st-1' });
ok($s->{ok}, 'stats ok') or diag explain $s;
is($s->{request_id}, 'st-1', 'stats echoes request_id');
is($s->{sandboxes}, 1, 'stats: one sandbox');
is($s->{sandboxes_ready}, 1, 'stats: ready');
is($s->{teardowns_pending}, 0, 'stats: no teardown pending');
is($s->{teardowns_failed}, 0, 'stats: no teardown failed');
is($s->{execs_running}, 0, 'stats: no exec running');
is($s->{sandboxes_max}, $h->cf('max_sandboxes') // 16, 'stats: max_sandboxes');
is($s->{started_at}, $r->{started_at}, "stats: ping's started_at");
ok($s->{uptime_s} >= 0 && $s->{uptime_s} < 600, 'stats: uptime');
ok($s->{connections} >= 1, 'stats: this connection counted');
ok($s->{buffered_bytes} >= 0 && $s->{buffer_limit_bytes} > 0, 'stats: buffers');
is(ref $s->{egress}, 'HASH', 'stats: the egress proxy');
ok(!grep({ exists $s->{$_} } qw(tenant agent id sandboxes_list)),
   'stats names no owner');

$r = $h->destroy($id);
ok($r->{ok}, 'destroy ok') or diag explain $r;
is($r->{id}, $id, 'destroy names the id');
is($r->{state}, 'terminated', 'state terminated');
is_deeply($r->{confirmed},
          { processes => JSON::PP::true, cgroups => JSON::PP::true,
            network => JSON::PP::true, mounts => JSON::PP::true,
            files => JSON::PP::true },
          'every confirmed flag true');
ok(!-e $h->state_dir . "/sb/$id", 'sandbox directory gone');
is($r->{ended}{end_reason}, 'deleted', 'the reply carries its ENDED record');
eventually('its state file is gone (once its ENDED record is on disk)', 10,
           sub { !-e $h->state_file($id) });
$r = $h->destroy($id);
is($r->{error}, 'ended', 'second destroy: ended');
is($r->{end_reason}, 'deleted', 'naming why');
($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $id });
is($r->{sandbox}{state}, 'ended', 'status after destroy: ended')
    or diag explain $r;
($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a2', id => $id });
is($r->{error}, 'not_found', "another agent's ended sandbox: not_found");

$h->leaks_ok('after destroy');
my $st = $h->stop;
is($st, 0, 'helper exits 0 on SIGTERM') or diag $h->log_text;
$h->leaks_ok('after stop');

done_testing;
