package VetoEgress;

# Test harness for the egress proxy, without the helper's ops: builds the
# whole picture out of network namespaces this test process owns.
#
#   world  (veg-<pid>-w)  runs egress-proxy (unprivileged, its seccomp);
#                         a veth to "hosts"; its default route leads into
#                         "hosts", where a trap counts every packet sent
#                         to an address that is not a test host: nothing
#                         the proxy dials can leave the machine, and a
#                         refused address that was dialled anyway shows.
#   hosts  (veg-<pid>-h)  the test hosts: registry (HTTP, HTTPS with a test
#                         CA), a CONNECT target, a DNS server.
#   sandbox(veg-<pid>-s)  loopback only, configured by the helper's seam
#                         (build/egress-linkctl setup): routes, nftables,
#                         sockets handed to the proxy.  Clients run there.
#
# Addresses: 198.19.N.0/24 (benchmark range, explicitly allowed in the
# proxy's config as the operator would) with N picked free per test.
# Everything is removed at the end, on failure and on signals too.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(remove_tree make_path);
use File::Temp qw(tempdir);
use JSON::PP;
use POSIX qw(:sys_wait_h);
use Socket;
use Test::More;
use Time::HiRes qw(time sleep);
use Eventually qw(eventually);

my $JSON = JSON::PP->new->utf8(1)->canonical(1);
our $ROOT = abs_path(dirname(__FILE__) . '/../..');
our %LIVE;

# The clients t/egress/helper.t (through the helper) and t/egress/api.t
# (through the HTTP API) run in a sandbox whose allowlist holds
# registry.example.test, from the sandbox's /workspace where ca.pem is the
# test CA.  Each reaches the registry in every way it can and prints what
# it got back:
#   curl:   explicit HTTP (/pkg), CONNECT (/tls), transparent TLS (/tr)
#           and HTTP (/trh) with the proxy variables unset or ignored;
#   python: explicit HTTP (/py), CONNECT (/pys), transparent (/pyt), and
#           the status and first line of notallowed.test's refusal;
#   node:   explicit HTTP (/node), CONNECT (/nodetls), transparent fetch
#           (/nodefetch), then "refused: <code>" for notallowed.test
#           (run it with NODE_EXTRA_CA_CERTS=/workspace/ca.pem).
our $CURL_CLIENTS = 'curl -sS http://registry.example.test/pkg; '
    . 'curl -sS --cacert ca.pem https://registry.example.test/tls; '
    . 'env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY '
    . '-u all_proxy curl -sS -m 10 --cacert ca.pem https://registry.example.test/tr; '
    . 'curl -sS --noproxy "*" -m 10 http://registry.example.test/trh';

our $PYTHON_CLIENT = <<'PY';
import os, ssl, urllib.request, urllib.error
ctx = ssl.create_default_context(cafile="ca.pem")
print(urllib.request.urlopen("http://registry.example.test/py").read().decode().strip())
print(urllib.request.urlopen("https://registry.example.test/pys", context=ctx).read().decode().strip())
try:
    urllib.request.urlopen("http://notallowed.test/py")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().splitlines()[0])
for k in list(os.environ):
    if k.lower().endswith("_proxy"):
        del os.environ[k]
print(urllib.request.urlopen("https://registry.example.test/pyt", context=ctx).read().decode().strip())
PY

our $NODE_CLIENT = <<'JS';
const http = require("http"), tls = require("tls"), fs = require("fs");
http.get({host: "127.0.0.1", port: 3128, path: "http://registry.example.test/node",
          headers: {Host: "registry.example.test"}}, r => {
  let b = ""; r.on("data", d => b += d); r.on("end", () => {
    console.log(b.trim());
    const req = http.request({host: "127.0.0.1", port: 3128, method: "CONNECT",
                              path: "registry.example.test:443"});
    req.on("connect", (res, sock) => {
      const t = tls.connect({socket: sock, servername: "registry.example.test",
                             ca: fs.readFileSync("ca.pem")}, () => {
        t.write("GET /nodetls HTTP/1.1\r\nHost: registry.example.test\r\nConnection: close\r\n\r\n");
      });
      let s = ""; t.on("data", d => s += d);
      t.on("end", () => {
        console.log(s.split("\r\n\r\n")[1].trim());
        fetch("https://registry.example.test/nodefetch").then(r => r.text())
          .then(t => console.log(t.trim()))
          .then(() => fetch("https://notallowed.test/x"))
          .catch(e => console.log("refused:", e.cause ? e.cause.code : e.message));
      });
    });
    req.end();
  });
});
JS

sub proxy_bin
{
    my $b = $ENV{VETO_EGRESS} // 'build/egress-proxy';
    return $b =~ m{^/} ? $b : "$ROOT/$b";
}

sub linkctl_bin { "$ROOT/build/egress-linkctl" }

sub sh
{
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

sub must
{
    my ($cmd) = @_;
    my ($rc, $out) = sh($cmd);
    die "command failed ($rc): $cmd\n$out" if $rc != 0;
    return $out;
}

sub pick_subnet
{
    my $used = `ip -4 -o addr show 2>/dev/null; for n in \$(ip netns list | awk '{print \$1}'); do ip -n \$n -4 -o addr show 2>/dev/null; done`;
    my $n = $$ % 250 + 1;
    for (1 .. 250) {
        return $n unless $used =~ /198\.19\.$n\./;
        $n = $n % 250 + 1;
    }
    die "no free 198.19.N.0/24 for the test";
}

# %o: allow_range (extra), proxy_conf (extra lines), names (extra map),
#     token (the registry's /private/ wants "Bearer TOKEN"), prepare (a
#     sub called with the harness before the proxy's config is written:
#     returns more config lines),
#     helper => 1: only the world and the test hosts; the helper under
#     test starts the proxy in the world (helper_conf()) and makes the
#     sandboxes' namespaces itself
sub start
{
    my ($class, %o) = @_;
    my $self = bless { pid => $$ }, $class;
    $LIVE{"$self"} = $self;

    for my $b (proxy_bin(), linkctl_bin()) {
        die "$b is missing: build it (make egress)\n" unless -x $b;
    }
    for my $t (qw(ip nft openssl curl python3)) {
        die "$t is missing (scripts/install-deps.sh)\n"
            unless system("command -v $t >/dev/null") == 0;
    }

    $self->{dir} = tempdir("veto-egress-$$-XXXXXX", TMPDIR => 1);
    chmod 0755, $self->{dir};
    my $n = $self->{net} = pick_subnet();
    $self->{world} = "veg-$$-w";
    $self->{hosts} = "veg-$$-h";
    $self->{sandbox} = "veg-$$-s";
    $self->{wv} = "vegw$$";
    $self->{hv} = "vegh$$";
    $self->{world_ip} = "198.19.$n.1";
    $self->{reg_ip} = "198.19.$n.2";
    $self->{target_ip} = "198.19.$n.3";
    $self->{dns_ip} = "198.19.$n.4";

    my ($w, $h, $s) = @$self{qw(world hosts sandbox)};
    must("ip netns add $w");
    $self->{made}{$w} = 1;
    must("ip netns add $h");
    $self->{made}{$h} = 1;
    if (!$o{helper}) {
        must("ip netns add $s");
        $self->{made}{$s} = 1;
    }
    must("ip -n $w link set lo up");
    must("ip -n $h link set lo up");
    must("ip -n $w link add $self->{wv} type veth peer name $self->{hv} netns $h");
    must("ip -n $w addr add $self->{world_ip}/24 dev $self->{wv}");
    must("ip -n $w addr add 2001:db8:$n\::1/64 dev $self->{wv} nodad");
    must("ip -n $w link set $self->{wv} up");
    for my $ip (@$self{qw(reg_ip target_ip dns_ip)}) {
        must("ip -n $h addr add $ip/24 dev $self->{hv}");
    }
    must("ip -n $h addr add 2001:db8:$n\::2/64 dev $self->{hv} nodad");
    must("ip -n $h link set $self->{hv} up");
    # everything the proxy could dial goes to the hosts' trap
    must("ip -n $w route add default via $self->{reg_ip}");
    must("ip -n $w -6 route add default via 2001:db8:$n\::2");
    my $trap = <<"NFT";
table inet trap {
    chain pre {
        type filter hook prerouting priority -300; policy accept;
        iifname "$self->{hv}" ip daddr != 198.19.$n.0/24 counter drop
        iifname "$self->{hv}" ip6 daddr != 2001:db8:$n\::/64 meta l4proto != ipv6-icmp counter drop
    }
}
NFT
    $self->write_file("trap.nft", $trap);
    must("ip netns exec $h nft -f $self->{dir}/trap.nft");

    $self->make_ca;

    my @map = (
        "registry.example.test=$self->{reg_ip}",
        "a.example.test=$self->{reg_ip}",
        "b.a.example.test=$self->{reg_ip}",
        "example.test=$self->{reg_ip}",
        "evil-example.test=$self->{reg_ip}",
        "example.test.evil=$self->{reg_ip}",
        "notallowed.test=$self->{reg_ip}",
        "askme.test=$self->{reg_ip}",
        "target.example.test=$self->{target_ip}",
        "self.example.test=$self->{world_ip}",
        "both.example.test=$self->{reg_ip}",
        "badcert.example.test=$self->{reg_ip}",
        "both.example.test=10.0.0.7",
        @{ $o{names} // [] },
    );
    $self->{log} = "$self->{dir}/hosts.log";
    my $args = join(' ', map { "--map $_" } @map)
        . " --rebind rebind.example.test=$self->{reg_ip},10.66.0.9"
        . ($o{token} ? " --token $o{token}" : '')
        . ($o{git_root} ? " --git-root $self->{dir}/git" : "");
    $self->{hosts_pid} = $self->spawn("$self->{dir}/hosts.out", 'ip', 'netns',
        'exec', $h, 'python3', "$ROOT/t/lib/egress_hosts.py",
        '--ip', $self->{reg_ip}, '--ip2', $self->{target_ip},
        '--dns-ip', $self->{dns_ip}, '--cert', "$self->{dir}/server.pem",
        '--key', "$self->{dir}/server.key", '--log', $self->{log},
        split(/ /, $args));
    eventually('the test hosts start', 20,
               sub { -s $self->{log} && $self->slurp($self->{log}) =~ /ready/ })
        or die "the test hosts did not start:\n"
            . $self->slurp("$self->{dir}/hosts.out");

    $self->{ctl} = "$self->{dir}/egress.sock";
    my $conf = join("\n",
        "control_socket = $self->{ctl}",
        "allowed_uids = 0",
        "user = nobody",
        "resolver = $self->{dns_ip}:53",
        "allow_range = 198.19.$n.0/24",
        "header_timeout_ms = " . ($o{header_timeout_ms} // 3000),
        "connect_timeout_ms = 3000",
        "dns_timeout_ms = 2000",
        "log_level = debug",
        @{ $o{proxy_conf} // [] },
        ($o{prepare} ? $o{prepare}->($self) : ()), "");
    $self->write_file("egress.conf", $conf);
    return $self if $o{helper};
    $self->start_proxy;

    # the sandbox's resolv.conf, as "ip netns exec" mounts it
    make_path("/etc/netns/$s");
    $self->{made_etc} = "/etc/netns/$s";
    must(linkctl_bin() . " resolv > /etc/netns/$s/resolv.conf");
    return $self;
}

# The helper's egress keys for this world (VetoTest->start(%conf)).
sub helper_conf
{
    my ($self) = @_;
    return (
        egress             => 'on',
        egress_proxy       => proxy_bin(),
        egress_user        => 'nobody',
        egress_netns       => "/run/netns/$self->{world}",
        egress_resolver    => "$self->{dns_ip}:53",
        egress_allow_range => "198.19.$self->{net}.0/24",
    );
}

sub start_proxy
{
    my ($self) = @_;
    $self->{proxy_starts}++;
    $self->{proxy_log} = "$self->{dir}/proxy.$self->{proxy_starts}.log";
    local $ENV{ASAN_OPTIONS} = $ENV{ASAN_OPTIONS}
        // 'detect_leaks=1:abort_on_error=0:exitcode=66';
    $self->{proxy_pid} = $self->spawn($self->{proxy_log}, 'ip', 'netns',
        'exec', $self->{world}, proxy_bin(), '-c', "$self->{dir}/egress.conf");
    eventually('the egress proxy starts', 20,
               sub { $self->slurp($self->{proxy_log}) =~ /ready:/ })
        or die "the egress proxy did not start:\n"
            . $self->slurp($self->{proxy_log});
}

sub stop_proxy
{
    my ($self) = @_;
    my $pid = delete $self->{proxy_pid} or return;
    kill 'TERM', $pid;
    my $t = time + 10;
    while (time < $t) {
        return $? if waitpid($pid, WNOHANG) == $pid;
        sleep 0.05;
    }
    kill 'KILL', $pid;
    waitpid($pid, 0);
    return -1;
}

sub spawn
{
    my ($self, $log, @cmd) = @_;
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        open(STDIN, '<', '/dev/null');
        open(STDOUT, '>>', $log) or POSIX::_exit(126);
        open(STDERR, '>&', \*STDOUT);
        exec(@cmd) or POSIX::_exit(127);
    }
    return $pid;
}

# The operator's credentials as the proxy reads them (docs/operations.md,
# "Credentials"): the bindings file of these lines, and each value in
# secrets/NAME; the directory 0700, each value 0600.  Returns the
# directory (the helper's egress_credentials).
sub write_credentials
{
    my ($self, $bindings, %values) = @_;
    my $d = "$self->{dir}/creds";
    File::Path::make_path("$d/secrets");
    chmod 0700, $d;
    $self->write_file('creds/bindings', join("\n", @$bindings, ''));
    for my $name (sort keys %values) {
        $self->write_file("creds/secrets/$name", $values{$name});
        chmod 0600, "$d/secrets/$name";
    }
    return $d;
}

sub write_file
{
    my ($self, $name, $text) = @_;
    open(my $fh, '>', "$self->{dir}/$name") or die "write $name: $!";
    print $fh $text;
    close $fh;
}

sub slurp
{
    my ($self, $f) = @_;
    open(my $fh, '<', $f) or return '';
    local $/;
    return scalar <$fh>;
}

sub make_ca
{
    my ($self) = @_;
    my $d = $self->{dir};
    must("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=Veto Egress Test CA' -keyout $d/ca.key -out $d/ca.pem");
    $self->write_file("san.cnf", "subjectAltName=DNS:registry.example.test,DNS:a.example.test,DNS:b.a.example.test,DNS:rebind.example.test,DNS:both.example.test\n");
    must("openssl req -newkey rsa:2048 -nodes -subj '/CN=registry.example.test' -keyout $d/server.key -out $d/server.csr");
    must("openssl x509 -req -in $d/server.csr -CA $d/ca.pem -CAkey $d/ca.key -CAcreateserial -days 2 -extfile $d/san.cnf -out $d/server.pem");
    $self->{ca} = "$d/ca.pem";
}

# Hands the sandbox's sockets to the proxy through the seam (netns: a
# namespace from add_netns, else the harness's sandbox namespace).
sub setup_sandbox
{
    my ($self, %o) = @_;
    my $id = $o{id} // "sb-test-$$";
    my $ns = $o{netns} // $self->{sandbox};
    my @args = ('setup', '--netns', "/run/netns/$ns",
        '--proxy', $self->{ctl}, '--sandbox', $id,
        '--tenant', $o{tenant} // 'tenant-test');
    push @args, map { ('--allow', $_) } @{ $o{allow} // [] };
    push @args, map { ('--ask', $_) } @{ $o{ask} // [] };
    push @args, map { ('--limit', $_) } @{ $o{limits} // [] };
    push @args, map { ('--credential', $_) } @{ $o{credential} // [] };
    my ($rc, $out) = $self->linkctl(@args);
    return ($rc, $out);
}

# One more sandbox namespace (loopback only), removed at the end.
sub add_netns
{
    my ($self, $tag) = @_;
    my $ns = "veg-$$-$tag";
    must("ip netns add $ns");
    $self->{made}{$ns} = 1;
    must("ip -n $ns link set lo up");
    return $ns;
}

# The proxy's stats, per sandbox id (attempt records that came with the
# reply are kept for records()).
sub stats
{
    my ($self) = @_;
    my ($rc, $out) = $self->linkctl('stats', '--proxy', $self->{ctl});
    die "stats: $out" if $rc != 0;
    my $st;
    for my $l (split /\n/, $out) {
        my $o = eval { $JSON->decode($l) } or next;
        if (($o->{op} // '') eq 'stats') {
            $st = { map { $_->{sandbox} => $_ } @{ $o->{sandboxes} } };
        } elsif (($o->{event} // '') eq 'attempt') {
            push @{ $self->{stashed} }, $o;
        }
    }
    return $st;
}

sub linkctl
{
    my ($self, @args) = @_;
    my $cmd = join(' ', map { shell_quote($_) } linkctl_bin(), @args);
    return sh($cmd);
}

sub shell_quote
{
    my ($s) = @_;
    return $s if $s =~ m{^[A-Za-z0-9_./:=,+\-]+$};
    $s =~ s/'/'\\''/g;
    return "'$s'";
}

# Runs a shell command inside the sandbox's namespace, proxy variables
# unset unless given; returns (exit code, output).
sub in_sandbox
{
    my ($self, $cmd, %env) = @_;
    my $envs = join(' ', map { "$_=" . shell_quote($env{$_}) } sort keys %env);
    my $full = "ip netns exec $self->{sandbox} env -u http_proxy -u https_proxy "
        . "-u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy -u NO_PROXY "
        . "-u no_proxy $envs timeout 30 sh -c " . shell_quote($cmd);
    return sh($full);
}

sub proxy_env
{
    my ($self) = @_;
    my %e;
    for (split /\n/, must(linkctl_bin() . " env")) {
        my ($k, $v) = split /=/, $_, 2;
        $e{$k} = $v;
    }
    return %e;
}

# Attempt records so far (drains them), as hashes.
sub records
{
    my ($self) = @_;
    my ($rc, $out) = $self->linkctl('records', '--proxy', $self->{ctl},
        '--wait', 200);
    die "records: $out" if $rc != 0;
    my @r = @{ delete $self->{stashed} // [] };
    for my $l (split /\n/, $out) {
        next unless $l =~ /^\{/;
        my $o = eval { $JSON->decode($l) } or next;
        push @r, $o if ($o->{event} // '') eq 'attempt';
    }
    push @{ $self->{all_records} }, @r;
    return @r;
}

sub host_log
{
    my ($self) = @_;
    my @l;
    for (split /\n/, $self->slurp($self->{log})) {
        my $o = eval { $JSON->decode($_) } or next;
        push @l, $o;
    }
    return @l;
}

# Packets that reached the hosts' namespace for an address that is not a
# test host (what a proxy that dialled a refused address would send).
sub trapped
{
    my ($self) = @_;
    my $out = must("ip netns exec $self->{hosts} nft list table inet trap");
    my $n = 0;
    $n += $1 while $out =~ /counter packets (\d+)/g;
    return $n;
}

sub proxy_alive
{
    my ($self) = @_;
    return 0 unless $self->{proxy_pid};
    return waitpid($self->{proxy_pid}, WNOHANG) == 0;
}

sub proxy_log_text { $_[0]->slurp($_[0]->{proxy_log}) }

sub cleanup
{
    my ($self) = @_;
    return if $self->{cleaned}++ || $$ != $self->{pid};
    my $st = $self->stop_proxy;
    $self->{proxy_exit} = $st;
    if (my $hp = delete $self->{hosts_pid}) {
        kill 'TERM', $hp;
        waitpid($hp, 0);
    }
    for my $ns (keys %{ $self->{made} // {} }) {
        system("ip netns pids $ns 2>/dev/null | xargs -r kill -9 2>/dev/null");
        system("ip netns del $ns 2>/dev/null");
    }
    remove_tree($self->{made_etc}) if $self->{made_etc};
    remove_tree($self->{dir}) if $self->{dir} && !$ENV{VETO_KEEP};
}

# Stops everything and reports what the proxy's exit said (a sanitizer
# report makes the proxy exit 66).
sub finish
{
    my ($self) = @_;
    my $st = $self->stop_proxy;
    my $log = $self->proxy_log_text;
    ok(defined $st && $st == 0, 'proxy stopped cleanly on SIGTERM')
        or diag("exit status $st\n" . substr($log, -4000));
    unlike($log, qr/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/,
        'no sanitizer report in the proxy log');
    $self->cleanup;
    for my $ns (qw(world hosts sandbox)) {
        ok(system("ip netns list | grep -qw $self->{$ns}") != 0,
            "namespace $self->{$ns} removed");
    }
}

# The end of a helper-driven test: only what this harness made.
sub finish_hosts
{
    my ($self) = @_;
    $self->cleanup;
    for my $ns (qw(world hosts)) {
        ok(system("ip netns list | grep -qw $self->{$ns}") != 0,
            "namespace $self->{$ns} removed");
    }
}

sub DESTROY { $_[0]->cleanup }

END { $_->cleanup for grep { defined } values %LIVE }

sub on_signal
{
    my ($sig) = @_;
    $_->cleanup for grep { defined } values %LIVE;
    $SIG{$sig} = 'DEFAULT';
    kill $sig, $$;
}
$SIG{$_} = \&on_signal for qw(INT TERM HUP);

1;
