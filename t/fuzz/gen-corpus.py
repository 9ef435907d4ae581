#!/usr/bin/env python3
"""Seed corpora and dictionaries of the helper's fuzz targets.

    t/fuzz/gen-corpus.py           rewrite t/fuzz/corpus/<target>/ and
                                   t/fuzz/dict/<target>.dict
    t/fuzz/gen-corpus.py --check   exit 1 if the committed files differ
                                   from what this script generates

Names, limits and keys are read from the helper's sources (vsb_protocol.h,
vsb_config.h, the schemas' allowed-field lists, config.c's key table and
conf/sandbox-helper.conf's defaults), and the script refuses to write
anything if an op, a request field or a config key has no seed: when the
protocol grows, this script must grow with it.

Files named regress-* in a corpus directory are crashers kept as
regression inputs (see docs/testing.md, "Fuzzing"); this script never touches them.
The module's targets other than fuzz_module_parsers (whose seeds are
committed files) are generated too, from t/fuzz/module_corpus.py; the
remaining fuzz_*.c targets keep their own seeds.
"""

import json
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     '..', '..'))
HELPER = os.path.join(ROOT, 'sandbox-helper')
FUZZ = os.path.join(ROOT, 't', 'fuzz')
sys.path.insert(0, FUZZ)
import module_corpus  # noqa: E402  (t/fuzz/module_corpus.py)

HELPER_TARGETS = ('fuzz_request', 'fuzz_frame', 'fuzz_config', 'fuzz_paths')
TARGETS = HELPER_TARGETS + tuple(module_corpus.TARGETS)
KEEP_PREFIX = 'regress-'


def die(msg):
    sys.stderr.write('gen-corpus: %s\n' % msg)
    sys.exit(1)


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


# ---- what the sources say ------------------------------------------------

def c_defines(*files):
    """#define NAME value for integer expressions and string literals."""
    out = {}
    for f in files:
        for name, val in re.findall(r'^#define\s+(VSB_\w+)\s+(.+?)\s*(?:/\*.*)?$',
                                    read(f), re.M):
            val = val.strip()
            m = re.fullmatch(r'"([^"]*)"', val)
            if m:
                out[name] = m.group(1)
                continue
            val = re.sub(r'\b([0-9]+)(?:ULL|UL|LL|U|L)\b', r'\1', val)
            if re.fullmatch(r'[0-9()*+\-<> ]+', val):
                out[name] = eval(val, {'__builtins__': {}})  # digits only
    return out


D = c_defines(os.path.join(HELPER, 'vsb_protocol.h'),
              os.path.join(HELPER, 'vsb_config.h'))


def need(name):
    if name not in D:
        die('%s is no longer defined in sandbox-helper/*.h' % name)
    return D[name]


OPS = sorted(v for k, v in D.items() if k.startswith('VSB_OP_'))
ERRORS = sorted(v for k, v in D.items() if k.startswith('VSB_E_'))
LIMIT_NAMES = sorted(v for k, v in D.items() if k.startswith('VSB_LIMIT_'))
MAX_ID = need('VSB_MAX_ID_LEN')
ID_LEN = need('VSB_SANDBOX_ID_LEN')
MAX_PATH = need('VSB_MAX_PATH')
MAX_NAME = need('VSB_MAX_NAME')
MAX_ARGV = need('VSB_MAX_ARGV')
MAX_ENV = need('VSB_MAX_ENV')
MAX_MD = need('VSB_MAX_METADATA_JSON')
MAX_JSON = need('VSB_MAX_JSON')
MAX_PAYLOAD = need('VSB_MAX_PAYLOAD')
MAGIC = need('VSB_FRAME_MAGIC').encode()
PROFILE_NAME_LEN = need('VSB_PROFILE_NAME_LEN')
MAX_UIDS = need('VSB_MAX_ALLOWED_UIDS')
MAX_PROFILES = need('VSB_MAX_PROFILES')
MAX_NET_ENTRY = need('VSB_MAX_NETWORK_ENTRY')
MAX_NET_BYTES = need('VSB_MAX_NETWORK_BYTES')
MAX_RANGES = need('VSB_EGRESS_MAX_RANGES')
EXEC_ID_LEN = need('VSB_EXEC_ID_LEN')
EPOCH_LEN = need('VSB_EPOCH_LEN')
MAX_STREAM = need('VSB_MAX_STREAM_PAYLOAD')


def schema_fields():
    """Every name in a `static const char *const allowed...[] = { ...,
    NULL }` list of the helper's sources: the fields some schema allows."""
    names = set()
    for fn in sorted(os.listdir(HELPER)):
        if not fn.endswith('.c'):
            continue
        text = read(os.path.join(HELPER, fn))
        for body in re.findall(
                r'static\s+const\s+char\s*\*\s*const\s+allowed\w*\s*\[\s*\]'
                r'\s*=\s*\{([^}]*)\}', text):
            for tok in re.findall(r'"([^"]*)"|\b(VSB_\w+)\b', body):
                if tok[0]:
                    names.add(tok[0])
                elif tok[1] in D and isinstance(D[tok[1]], str):
                    names.add(D[tok[1]])
    if not names:
        die('found no allowed-field lists in sandbox-helper/*.c')
    return names


FIELDS = schema_fields()


def config_keys():
    keys = re.findall(r'\{\s*"([a-z_]+)",\s*VSB_K_\w+',
                      read(os.path.join(HELPER, 'config.c')))
    if not keys:
        die('found no key table in sandbox-helper/config.c')
    return keys


CONF_KEYS = config_keys()
CONF_FILE = read(os.path.join(ROOT, 'conf', 'sandbox-helper.conf'))


def conf_defaults():
    """key = value of the shipped config; a commented-out "#key = value"
    (the documented default) when no line sets the key."""
    vals, commented = {}, {}
    for line in CONF_FILE.splitlines():
        m = re.match(r'\s*#\s*([a-z_]+)\s*=\s*([^#\s]+)', line)
        if m:
            commented.setdefault(m.group(1), m.group(2))
        line = line.split('#', 1)[0].strip()
        if '=' in line:
            k, v = (s.strip() for s in line.split('=', 1))
            vals[k] = v
    for k, v in commented.items():
        vals.setdefault(k, v)
    return vals


CONF = conf_defaults()


def conf_num(key):
    if key not in CONF or not CONF[key].isdigit():
        die('conf/sandbox-helper.conf has no numeric "%s"' % key)
    return int(CONF[key])


# Ceilings a request meets with the default config (fuzz_request uses it).
CEIL = {name: conf_num('max_' + name)
        for name in ('memory_mb', 'pids', 'cpu_percent', 'disk_mb',
                     'timeout_s', 'output_bytes')}
MAX_TTL = conf_num('max_ttl_s')
MAX_IDLE = conf_num('max_idle_s')
NET_ENTRIES = conf_num('egress_max_entries')
SERVER_PAYLOAD = conf_num('max_file_bytes')
SNAP_MAX_COUNT = conf_num('snapshot_max_count')
SNAP_MAX_BYTES = conf_num('snapshot_max_bytes')
SNAP_MAX_TTL = conf_num('snapshot_max_ttl_s')
ABS = {'max_memory_mb': need('VSB_ABS_MEMORY_MB'),
       'max_pids': need('VSB_ABS_PIDS'),
       'max_cpu_percent': need('VSB_ABS_CPU_PERCENT'),
       'max_disk_mb': need('VSB_ABS_DISK_MB'),
       'max_timeout_s': need('VSB_ABS_TIMEOUT_S'),
       'max_output_bytes': need('VSB_ABS_OUTPUT_BYTES'),
       'max_ttl_s': need('VSB_ABS_TTL_S'),
       'max_sandboxes': need('VSB_ABS_SANDBOXES'),
       'max_file_bytes': need('VSB_ABS_FILE_BYTES'),
       'max_execs_per_sandbox': 1024,
       'max_archive_bytes': MAX_STREAM,
       'max_background_execs': need('VSB_ABS_BACKGROUND'),
       'max_idle_s': need('VSB_ABS_TTL_S'),
       'ended_retention_s': need('VSB_ABS_ENDED_RETENTION_S'),
       'ended_max': need('VSB_ABS_ENDED'),
       'egress_max_entries': need('VSB_ABS_EGRESS_ENTRIES'),
       'egress_max_connections': need('VSB_ABS_EGRESS_CONNS'),
       'egress_max_bytes_out': need('VSB_ABS_EGRESS_BYTES'),
       'egress_max_bytes_in': need('VSB_ABS_EGRESS_BYTES'),
       'snapshot_max_count': need('VSB_ABS_SNAPSHOTS'),
       'snapshot_max_bytes': need('VSB_ABS_SNAPSHOT_BYTES'),
       'snapshot_max_files': need('VSB_ABS_SNAPSHOT_FILES'),
       'snapshot_max_ttl_s': need('VSB_ABS_SNAPSHOT_TTL_S'),
       'snapshot_default_ttl_s': need('VSB_ABS_SNAPSHOT_TTL_S')}
for _k in ('memory_mb', 'pids', 'cpu_percent', 'disk_mb', 'timeout_s',
           'output_bytes', 'ttl_s', 'idle_s'):
    ABS['default_' + _k] = ABS['max_' + _k]


# ---- fuzz_request ----------------------------------------------------------

SB = 'sb-0123456789abcdef01234567'
assert len(SB) == ID_LEN
EX = 'ex-0123456789abcdef'
EPOCH = ('0123456789abcdef' * 4)[:EPOCH_LEN]
assert len(EX) == EXEC_ID_LEN
OWN = {'tenant': 't1', 'agent': 'a1'}


def enc(obj):
    return json.dumps(obj, separators=(',', ':'), ensure_ascii=False)


class Seeds:
    def __init__(self):
        self.files = {}

    def add(self, name, data):
        name = re.sub(r'[^A-Za-z0-9_.=+-]', '_', name)
        if name.startswith(KEEP_PREFIX):
            die('seed name %s uses the regression prefix' % name)
        if name in self.files:
            die('duplicate seed name %s' % name)
        if isinstance(data, str):
            data = data.encode('utf-8')
        self.files[name] = data


def request_seeds():
    s = Seeds()
    used_ops, used_fields = set(), set()

    def req(name, obj, payload=False, raw=None, egress_off=False):
        # byte 0: odd = the frame's payload length, even = no payload;
        # bit 1: the helper runs with egress = off
        text = raw if raw is not None else enc(obj)
        if isinstance(obj, dict):
            if isinstance(obj.get('op'), str):
                used_ops.add(obj['op'])
            used_fields.update(obj.keys())
            for sub in ('limits', 'network', 'secret'):
                if isinstance(obj.get(sub), dict):
                    used_fields.update(obj[sub].keys())
        b0 = (0x21 if payload else 0x00) | (0x02 if egress_off else 0x00)
        s.add(name, bytes([b0]) + text.encode('utf-8'))

    def owned(op, **kw):
        o = {'op': op}
        o.update(OWN)
        if op not in ('create', 'list'):
            o['id'] = SB
        o.update(kw)
        return o

    # -- shapes every request shares
    req('any-array', [{'op': 'ping'}])
    req('any-string', 'ping')
    req('any-number', 1)
    req('any-null', None)
    req('any-empty-object', {})
    req('any-truncated', None, raw='{"op":"ping"')
    req('any-duplicate-key', None, raw='{"op":"ping","op":"ping"}')
    req('any-escapes', None,
        raw='{"op":"\\u0070ing","request_id":"\\ud83d\\ude00\\t\\/"}')
    req('any-lone-surrogate', None, raw='{"op":"ping","request_id":"\\ud800"}')
    req('any-nul-escape', None, raw='{"op":"ping","request_id":"a\\u0000b"}')
    req('any-whitespace', None, raw=' \t\r\n{ "op" : "ping" }\n')
    req('any-deep-nesting', None,
        raw='{"op":"create","tenant":"t1","agent":"a1","metadata":'
            + '{"a":' * 64 + '1' + '}' * 64 + '}')
    req('op-missing', {'request_id': 'r1'})
    req('op-not-string', {'op': 1})
    req('op-empty', {'op': ''})
    req('op-unknown', {'op': 'pong', 'request_id': 'r1'})
    req('op-upper', {'op': 'PING'})
    req('op-33-bytes', {'op': 'p' * 33})
    req('op-32-bytes', {'op': 'p' * 32})
    req('request_id-max', {'op': 'ping', 'request_id': 'r' * MAX_ID})
    req('request_id-over', {'op': 'ping', 'request_id': 'r' * (MAX_ID + 1)})
    req('request_id-not-string', {'op': 'ping', 'request_id': 7})
    req('request_id-echoed-on-error', {'op': 'status', 'request_id': 'r9'})

    # -- ping
    req('ping', {'op': 'ping'})
    req('ping-request_id', {'op': 'ping', 'request_id': 'req-1'})
    req('ping-unknown-field', {'op': 'ping', 'tenant': 't1'})
    req('ping-payload', {'op': 'ping'}, payload=True)
    req('ping-brief', {'op': 'ping', 'brief': True})
    req('ping-brief-false', {'op': 'ping', 'brief': False})
    req('ping-brief-not-bool', {'op': 'ping', 'brief': 1})

    # -- profiles (no owner: the gateway's policy decides which a caller may use)
    req('profiles', {'op': 'profiles'})
    req('profiles-request_id', {'op': 'profiles', 'request_id': 'req-2'})
    req('profiles-tenant', {'op': 'profiles', 'tenant': 't1'})
    req('profiles-payload', {'op': 'profiles'}, payload=True)

    # -- stats (no owner: figures of the whole helper, for the metrics)
    req('stats', {'op': 'stats'})
    req('stats-request_id', {'op': 'stats', 'request_id': 'req-3'})
    req('stats-tenant', {'op': 'stats', 'tenant': 't1'})
    req('stats-agent', {'op': 'stats', 'agent': 'a1'})
    req('stats-payload', {'op': 'stats'}, payload=True)

    # -- tenant and agent, through status (every owned op shares them)
    for who in ('tenant', 'agent'):
        o = owned('status')
        del o[who]
        req('%s-missing' % who, o)
        for desc, val in (('empty', ''), ('max', 'x' * MAX_ID),
                          ('over', 'x' * (MAX_ID + 1)), ('space', 'a b'),
                          ('control', 'a\x01'), ('del', 'a\x7f'),
                          ('utf8', 'h\u00e9'), ('number', 1),
                          ('null', None), ('punct', '!~')):
            req('%s-%s' % (who, desc), owned('status', **{who: val}))

    # -- status, destroy and usage: one owned sandbox
    for op in ('status', 'destroy', 'usage'):
        req(op, owned(op))
        req(op + '-request_id', owned(op, request_id='r2'))
        req(op + '-payload', owned(op), payload=True)
        req(op + '-unknown-field', owned(op, path='x'))
        o = owned(op)
        del o['id']
        req(op + '-id-missing', o)
    # -- epoch: optional beside every sandbox id (a gateway's ownership
    # record); checked against the run at dispatch, so any well-formed one
    # parses
    for op, kw, pl in (('status', {}, False), ('destroy', {}, False),
                       ('usage', {}, False),
                       ('exec', {'argv': ['/bin/true']}, True),
                       ('exec_status', {'exec': EX}, False),
                       ('exec_kill', {'exec': EX}, False),
                       ('exec_output', {'exec': EX, 'stream': 'stdout'}, False),
                       ('write_file', {'path': 'a'}, True),
                       ('read_file', {'path': 'a'}, False),
                       ('extract_archive', {'path': 'a'}, True),
                       ('export_archive', {'path': 'a'}, False),
                       ('update_lifetime', {'ttl_s': 60}, False),
                       ('update_network', {'add': ['example.test']}, False)):
        req(op + '-epoch', owned(op, epoch=EPOCH, **kw), payload=pl)
    for desc, val in (('upper', EPOCH.upper()), ('short', EPOCH[:-1]),
                      ('long', EPOCH + '0'), ('nonhex', EPOCH[:-1] + 'g'),
                      ('empty', ''), ('number', 5), ('null', None),
                      ('nul', EPOCH[:4] + '\x00' + EPOCH[5:])):
        req('epoch-' + desc, owned('status', epoch=val))
    req('epoch-without-id', owned('list', epoch=EPOCH))
    req('epoch-ping', {'op': 'ping', 'epoch': EPOCH})

    for desc, val in (('upper', 'sb-0123456789ABCDEF01234567'),
                      ('short', SB[:-1]), ('long', SB + '0'),
                      ('prefix', 'sb_' + SB[3:]), ('nonhex', SB[:-1] + 'g'),
                      ('number', 5), ('empty', ''), ('traversal', '../sb-x')):
        req('id-' + desc, owned('destroy', id=val))

    req('destroy-reason-admin', owned('destroy', reason='admin'))
    # an administrator's destroy may name no agent
    req('destroy-admin-no-agent',
        {k: v for k, v in owned('destroy', reason='admin').items()
         if k != 'agent'})
    req('destroy-no-agent',
        {k: v for k, v in owned('destroy').items() if k != 'agent'})
    req('destroy-reason-deleted', owned('destroy', reason='deleted'))
    for desc, val in (('other', 'expired'), ('empty', ''), ('number', 1),
                      ('long', 'a' * 17)):
        req('destroy-reason-' + desc, owned('destroy', reason=val))

    # -- update_lifetime
    req('update_lifetime', owned('update_lifetime', ttl_s=7200))
    req('update_lifetime-full', owned('update_lifetime', request_id='r14',
                                      ttl_s=MAX_TTL, idle_s=MAX_IDLE))
    req('update_lifetime-idle', owned('update_lifetime', idle_s=1))
    req('update_lifetime-none', owned('update_lifetime'))
    req('update_lifetime-ttl-over', owned('update_lifetime',
                                          ttl_s=MAX_TTL + 1))
    req('update_lifetime-idle-over', owned('update_lifetime',
                                           idle_s=MAX_IDLE + 1))
    req('update_lifetime-ttl-zero', owned('update_lifetime', ttl_s=0))
    req('update_lifetime-idle-string', owned('update_lifetime', idle_s='1'))
    req('update_lifetime-unknown-field', owned('update_lifetime', ttl_s=1,
                                               extend_s=60))
    req('update_lifetime-payload', owned('update_lifetime', ttl_s=60),
        payload=True)

    # -- ended: the gateway's poll
    req('ended', {'op': 'ended'})
    req('ended-full', {'op': 'ended', 'request_id': 'r15', 'after': 12,
                       'max': 64})
    req('ended-after-zero', {'op': 'ended', 'after': 0})
    for desc, val in (('negative', -1), ('float', 1.5), ('string', '3'),
                      ('null', None)):
        req('ended-after-' + desc, {'op': 'ended', 'after': val})
    for desc, val in (('one', 1), ('zero', 0), ('over', 65), ('string', '4')):
        req('ended-max-' + desc, {'op': 'ended', 'max': val})
    req('ended-owner', {'op': 'ended', 'tenant': 't1'})
    req('ended-payload', {'op': 'ended'}, payload=True)

    # -- clock_advance: the test clock (served only with test_clock = on;
    # the schema is checked either way)
    req('clock_advance', {'op': 'clock_advance', 'seconds': 60})
    req('clock_advance-full', {'op': 'clock_advance', 'request_id': 'r40',
                               'seconds': 1})
    req('clock_advance-max', {'op': 'clock_advance',
                              'seconds': need('VSB_CLOCK_ADVANCE_MAX_S')})
    for desc, val in (('over', need('VSB_CLOCK_ADVANCE_MAX_S') + 1),
                      ('zero', 0), ('negative', -1), ('float', 1.5),
                      ('string', '5'), ('null', None), ('bool', True),
                      ('huge', 9223372036854775807)):
        req('clock_advance-' + desc, {'op': 'clock_advance', 'seconds': val})
    req('clock_advance-none', {'op': 'clock_advance'})
    req('clock_advance-unknown-field', {'op': 'clock_advance', 'seconds': 5,
                                        'tenant': 't1'})
    req('clock_advance-payload', {'op': 'clock_advance', 'seconds': 5},
        payload=True)

    # -- list
    req('list', {'op': 'list', 'tenant': 't1'})
    req('list-ended', owned('list', ended=True))
    req('list-ended-false', {'op': 'list', 'tenant': 't1', 'ended': False})
    req('list-ended-string', owned('list', ended='yes'))
    req('list-agent', owned('list'))
    req('list-request_id', owned('list', request_id='r3'))
    req('list-agent-bad', owned('list', agent=''))
    req('list-unknown-field', owned('list', id=SB))
    req('list-no-tenant', {'op': 'list'})
    req('list-payload', owned('list'), payload=True)

    # -- create
    full_limits = {'memory_mb': 512, 'pids': 64, 'cpu_percent': 100,
                   'disk_mb': 64, 'timeout_s': 30, 'output_bytes': 65536}
    req('create', owned('create'))
    req('create-full', owned('create', request_id='r4', profile='alt',
                             limits=full_limits, ttl_s=600, network='none',
                             env={'LANG': 'C', 'A_1': ''},
                             metadata={'task': 'x', 'n': [1, 2]}))
    req('create-payload', owned('create'), payload=True)
    req('create-unknown-field', owned('create', id=SB))
    req('create-limits-at-ceiling', owned('create', limits=dict(CEIL),
                                          ttl_s=MAX_TTL))
    req('create-limits-at-one', owned('create', limits={k: 1 for k in CEIL},
                                      ttl_s=1))
    req('create-limits-empty', owned('create', limits={}))
    req('create-limits-not-object', owned('create', limits=[1]))
    req('create-limits-unknown', owned('create', limits={'swap_mb': 1}))
    for k, v in CEIL.items():
        req('create-limit-%s-over' % k, owned('create', limits={k: v + 1}))
        req('create-limit-%s-zero' % k, owned('create', limits={k: 0}))
    req('create-limit-negative', owned('create', limits={'pids': -1}))
    req('create-limit-float', owned('create', limits={'pids': 1.5}))
    req('create-limit-string', owned('create', limits={'pids': '10'}))
    req('create-limit-bool', owned('create', limits={'pids': True}))
    req('create-limit-int64-max', None,
        raw='{"op":"create","tenant":"t1","agent":"a1","limits":'
            '{"memory_mb":9223372036854775807}}')
    req('create-limit-int64-min', None,
        raw='{"op":"create","tenant":"t1","agent":"a1","limits":'
            '{"memory_mb":-9223372036854775808}}')
    req('create-limit-too-big', None,
        raw='{"op":"create","tenant":"t1","agent":"a1","limits":'
            '{"memory_mb":18446744073709551616}}')
    req('create-limit-exponent', None,
        raw='{"op":"create","tenant":"t1","agent":"a1","limits":'
            '{"memory_mb":1e3}}')
    req('create-caps', owned('create', caps={'timeout_s': 1, 'memory_mb': 64,
                                             'ttl_s': 60, 'idle_s': 30}))
    req('create-caps-unknown', owned('create', caps={'swap_mb': 1}))
    req('create-caps-zero', owned('create', caps={'pids': 0}))
    req('create-caps-not-object', owned('create', caps=[1]))
    req('create-ttl-over', owned('create', ttl_s=MAX_TTL + 1))
    req('create-ttl-zero', owned('create', ttl_s=0))
    req('create-ttl-string', owned('create', ttl_s='60'))
    req('create-idle', owned('create', idle_s=MAX_IDLE))
    req('create-idle-over', owned('create', idle_s=MAX_IDLE + 1))
    req('create-idle-zero', owned('create', idle_s=0))
    req('create-profile-default', owned('create', profile='default'))
    req('create-profile-unknown', owned('create', profile='nope'))
    req('create-profile-max', owned('create', profile='p' * PROFILE_NAME_LEN))
    req('create-profile-over', owned('create',
                                     profile='p' * (PROFILE_NAME_LEN + 1)))
    req('create-profile-number', owned('create', profile=1))
    req('create-network-host', owned('create', network='host'))
    req('create-network-max', owned('create', network='n' * 64))
    req('create-network-over', owned('create', network='n' * 65))
    req('create-network-number', owned('create', network=0))
    req('create-env-empty', owned('create', env={}))
    req('create-env-max', owned('create',
                                env={'V%d' % i: 'x' for i in range(MAX_ENV)}))
    req('create-env-over', owned('create', env={'V%d' % i: 'x'
                                                for i in range(MAX_ENV + 1)}))
    req('create-env-not-object', owned('create', env=['A=1']))
    req('create-env-name-digit', owned('create', env={'1A': 'x'}))
    req('create-env-name-dash', owned('create', env={'A-B': 'x'}))
    req('create-env-name-equals', owned('create', env={'A=B': 'x'}))
    req('create-env-name-empty', owned('create', env={'': 'x'}))
    req('create-env-name-max', owned('create', env={'N' * MAX_NAME: 'x'}))
    req('create-env-name-over', owned('create', env={'N' * (MAX_NAME + 1): 'x'}))
    req('create-env-value-number', owned('create', env={'A': 1}))
    req('create-env-value-nul', None,
        raw='{"op":"create","tenant":"t1","agent":"a1","env":{"A":"x\\u0000y"}}')
    req('create-metadata-nested', owned('create',
                                        metadata={'a': {'b': [None, True]}}))
    md_overhead = len(enc({'k': ''}))
    req('create-metadata-max', owned('create', metadata={
        'k': 'm' * (MAX_MD - md_overhead)}))
    req('create-metadata-over', owned('create', metadata={
        'k': 'm' * (MAX_MD - md_overhead + 1)}))
    req('create-metadata-array', owned('create', metadata=[1]))
    req('create-metadata-string', owned('create', metadata='x'))

    # -- create's network: "none" or an allowlist (egress = on unless said)
    good = ['registry.example.test', '*.pypi.example.test:443',
            '[2001:db8::1]:8443', '192.0.2.1', 'a.test:8080']
    req('create-network-allow', owned('create', network={'allow': good}))
    req('create-network-allow-ask', owned('create', network={
        'allow': good[:2], 'ask': ['github.example.test', '*.npm.example.test']}))
    req('create-network-allow-empty', owned('create', network={'allow': []}))
    req('create-network-egress-off', owned('create', network={'allow': good}),
        egress_off=True)
    req('create-network-none-egress-off', owned('create', network='none'),
        egress_off=True)
    req('create-network-no-allow', owned('create', network={'ask': good}))
    req('create-network-unknown', owned('create', network={'allow': [],
                                                           'deny': []}))
    req('create-network-array', owned('create', network=good))
    req('create-network-allow-string', owned('create', network={
        'allow': 'a.test'}))
    req('create-network-ask-string', owned('create', network={
        'allow': [], 'ask': 'a.test'}))
    req('create-network-entry-number', owned('create', network={
        'allow': ['a.test', 443]}))
    req('create-network-entry-empty', owned('create', network={'allow': ['']}))
    req('create-network-entry-max', owned('create', network={
        'allow': ['e' * MAX_NET_ENTRY]}))
    req('create-network-entry-over', owned('create', network={
        'allow': ['e' * (MAX_NET_ENTRY + 1)]}))
    req('create-network-entry-nul', None,
        raw='{"op":"create","tenant":"t1","agent":"a1","network":'
            '{"allow":["a.test\\u0000b"]}}')
    for desc, entry in (('url', 'http://a.test/'), ('star', '*'),
                        ('one-label-wildcard', '*.test'),
                        ('wildcard-ip', '*.192.0.2.1'),
                        ('port-zero', 'a.test:0'), ('port-over', 'a.test:65536'),
                        ('port-empty', 'a.test:'), ('empty-label', 'a..test'),
                        ('v6-open', '[2001:db8::1'), ('v6-bare', '2001:db8::1'),
                        ('space', 'a test'), ('underscore', 'a_b.test'),
                        ('trailing-dot', 'a.test.'), ('upper', 'A.TEST'),
                        ('octal-ip', '0177.0.0.1'), ('hex-ip', '0x7f.1'),
                        ('decimal-ip', '2130706433'),
                        ('label-64', 'l' * 64 + '.test')):
        req('create-network-entry-' + desc, owned('create', network={
            'allow': [entry]}))
    req('create-network-entries-max', owned('create', network={
        'allow': ['h%d.test' % i for i in range(NET_ENTRIES)]}))
    req('create-network-entries-over', owned('create', network={
        'allow': ['h%d.test' % i for i in range(NET_ENTRIES + 1)]}))
    req('create-network-entries-over-with-ask', owned('create', network={
        'allow': ['h%d.test' % i for i in range(NET_ENTRIES // 2 + 1)],
        'ask': ['k%d.test' % i for i in range(NET_ENTRIES // 2)]}))
    # entries of 249 bytes: the byte bound is reached below the count bound
    long_host = '%02d' + ('.'.join(['x' * 61] * 4) + '.t')[2:]
    n_fit = MAX_NET_BYTES // len(long_host % 0)
    req('create-network-bytes-max', owned('create', network={
        'allow': [long_host % i for i in range(n_fit)]}))
    req('create-network-bytes-over', owned('create', network={
        'allow': [long_host % i for i in range(n_fit)],
        'ask': ['%d.%s.test' % (i, 'y' * 60) for i in range(4)]}))

    # -- update_network
    req('update_network', owned('update_network', add=['registry.example.test']))
    req('update_network-full', owned('update_network', request_id='r8',
                                     add=good))
    req('update_network-egress-off', owned('update_network', add=good),
        egress_off=True)
    req('update_network-empty', owned('update_network', add=[]))
    req('update_network-missing', owned('update_network'))
    req('update_network-string', owned('update_network', add='a.test'))
    req('update_network-object', owned('update_network',
                                       add={'allow': ['a.test']}))
    req('update_network-bad-entry', owned('update_network',
                                          add=['a.test', 'http://b.test']))
    req('update_network-max', owned('update_network', add=[
        'h%d.test' % i for i in range(NET_ENTRIES)]))
    req('update_network-over', owned('update_network', add=[
        'h%d.test' % i for i in range(NET_ENTRIES + 1)]))
    req('update_network-unknown-field', owned('update_network', add=['a.test'],
                                              allow=['b.test']))
    req('update_network-id-bad', owned('update_network', add=['a.test'],
                                       id='sb-x'))
    req('update_network-payload', owned('update_network', add=['a.test']),
        payload=True)
    # credentials by name (the harness configures none: "not enabled")
    req('update_network-credentials', owned('update_network',
                                            credentials=['git-deploy']))
    req('update_network-credentials-object', owned('update_network',
        credentials=[{'name': 'git-deploy', 'host': 'evil.test'}]))
    req('update_network-credentials-remove', owned('update_network',
        credentials_remove=['git-deploy', 'Bad Name']))
    req('update_network-credentials-remove-with-add', owned('update_network',
        credentials_remove=['git-deploy'], add=['a.test']))
    # an agent's own secret (its binding by the operator's rules)
    secret = {'name': 'my-api', 'value': 'tok-0123456789abcdef',
              'host': 'api.example.test', 'header': 'Authorization',
              'template': 'Bearer {{secret}}', 'env': 'MY_API_TOKEN',
              'path': '/v1/'}
    req('update_network-secret', owned('update_network', secret=secret))
    req('update_network-secret-crlf', owned('update_network', secret=dict(
        secret, value='tok\r\nX-Injected: 1')))
    req('update_network-secret-header', owned('update_network', secret=dict(
        secret, header='Host', template='{{secret}} "q"')))
    req('update_network-secret-unknown', owned('update_network', secret=dict(
        secret, port=443)))
    req('update_network-secret-with-add', owned('update_network',
        secret=secret, add=['a.test']))
    req('update_network-secret-string', owned('update_network',
        secret='my-api=tok'))
    req('create-network-credentials', owned('create', network={
        'allow': [], 'credentials': ['git-deploy', 'git-deploy']}))

    # -- exec
    req('exec', owned('exec', argv=['/bin/true']), payload=True)
    req('exec-no-stdin', owned('exec', argv=['/bin/sh', '-c', 'echo hi']))
    req('exec-full', owned('exec', request_id='r5',
                           argv=['python3', '-c', 'print(1)'],
                           cwd='/workspace/sub', env={'PATH': '/usr/bin'},
                           timeout_s=10), payload=True)
    req('exec-argv-max', owned('exec', argv=['a'] * MAX_ARGV))
    req('exec-argv-over', owned('exec', argv=['a'] * (MAX_ARGV + 1)))
    req('exec-argv-empty', owned('exec', argv=[]))
    req('exec-argv-missing', owned('exec'))
    req('exec-argv-string', owned('exec', argv='/bin/true'))
    req('exec-argv-element-number', owned('exec', argv=['/bin/echo', 1]))
    req('exec-argv0-empty', owned('exec', argv=['', 'x']))
    req('exec-argv-later-empty', owned('exec', argv=['/bin/echo', '']))
    req('exec-argv-nul', None,
        raw='{"op":"exec","tenant":"t1","agent":"a1","id":"%s",'
            '"argv":["a\\u0000b"]}' % SB)
    req('exec-argv-utf8', owned('exec', argv=['/bin/echo', '\u00fc\u4e2d']))
    req('exec-cwd-root', owned('exec', argv=['ls'], cwd='/'))
    req('exec-cwd-relative', owned('exec', argv=['ls'], cwd='tmp'))
    req('exec-cwd-max', owned('exec', argv=['ls'],
                              cwd='/' + 'c' * (MAX_PATH - 1)))
    req('exec-cwd-over', owned('exec', argv=['ls'], cwd='/' + 'c' * MAX_PATH))
    req('exec-cwd-number', owned('exec', argv=['ls'], cwd=1))
    req('exec-cwd-dotdot', owned('exec', argv=['ls'], cwd='/workspace/../..'))
    req('exec-timeout-max', owned('exec', argv=['ls'],
                                  timeout_s=CEIL['timeout_s']))
    req('exec-timeout-over', owned('exec', argv=['ls'],
                                   timeout_s=CEIL['timeout_s'] + 1))
    req('exec-timeout-zero', owned('exec', argv=['ls'], timeout_s=0))
    req('exec-timeout-float', owned('exec', argv=['ls'], timeout_s=0.5))
    req('exec-env-bad', owned('exec', argv=['ls'], env={'BAD NAME': 'x'}))
    req('exec-env-not-object', owned('exec', argv=['ls'], env='A=1'))
    req('exec-unknown-field', owned('exec', argv=['ls'], mode=0o755))
    req('exec-id-bad', owned('exec', argv=['ls'], id='sb-1'))
    req('exec-no-agent', {'op': 'exec', 'tenant': 't1', 'id': SB,
                          'argv': ['ls']})

    # -- exec: output bounds, streamed, background
    req('exec-output_bytes', owned('exec', argv=['ls'], output_bytes=4096))
    req('exec-caps', owned('exec', argv=['ls'],
                           caps={'timeout_s': 1, 'output_bytes': 64}))
    req('exec-caps-create-only', owned('exec', argv=['ls'],
                                       caps={'memory_mb': 1}))
    req('exec-output_bytes-max', owned('exec', argv=['ls'],
                                       output_bytes=CEIL['output_bytes']))
    req('exec-output_bytes-over', owned('exec', argv=['ls'],
                                        output_bytes=CEIL['output_bytes'] + 1))
    req('exec-output_bytes-zero', owned('exec', argv=['ls'], output_bytes=0))
    req('exec-stream', owned('exec', argv=['make', 'test'], stream=True,
                             cwd='proj'))
    req('exec-stream-false', owned('exec', argv=['ls'], stream=False))
    req('exec-stream-number', owned('exec', argv=['ls'], stream=1))
    req('exec-background', owned('exec', argv=['sleep', '9'],
                                 background=True, timeout_s=5), payload=True)
    req('exec-background-string', owned('exec', argv=['ls'],
                                        background='true'))
    req('exec-stream-and-background', owned('exec', argv=['ls'], stream=True,
                                            background=True))
    req('exec-cwd-workspace-relative', owned('exec', argv=['ls'],
                                             cwd='src/sub'))
    req('exec-cwd-relative-dotdot', owned('exec', argv=['ls'], cwd='../etc'))
    req('exec-cwd-relative-empty-part', owned('exec', argv=['ls'],
                                              cwd='a//b'))

    # -- background execs: status, output, kill
    for op in ('exec_status', 'exec_kill'):
        req(op, owned(op, exec=EX))
        req(op + '-request_id', owned(op, exec=EX, request_id='r10'))
        req(op + '-exec-missing', owned(op))
        req(op + '-payload', owned(op, exec=EX), payload=True)
        req(op + '-unknown-field', owned(op, exec=EX, signal=9))
    for desc, val in (('upper', EX.upper()), ('short', EX[:-1]),
                      ('long', EX + '0'), ('prefix', 'sb-' + EX[3:]),
                      ('nonhex', EX[:-1] + 'g'), ('number', 7), ('empty', ''),
                      ('traversal', 'ex-../../../x')):
        req('exec-id-' + desc, owned('exec_status', exec=val))
    req('exec_output', owned('exec_output', exec=EX, stream='stdout'))
    req('exec_output-full', owned('exec_output', request_id='r11', exec=EX,
                                  stream='stderr', offset=1000,
                                  max_bytes=65536))
    req('exec_output-follow', owned('exec_output', exec=EX, stream='stdout',
                                    offset=0, follow=True))
    req('exec_output-follow-max_bytes', owned('exec_output', exec=EX,
                                              stream='stdout', follow=True,
                                              max_bytes=10))
    req('exec_output-follow-string', owned('exec_output', exec=EX,
                                           stream='stdout', follow='yes'))
    req('exec_output-stream-missing', owned('exec_output', exec=EX))
    req('exec_output-stream-stdin', owned('exec_output', exec=EX,
                                          stream='stdin'))
    req('exec_output-stream-number', owned('exec_output', exec=EX, stream=1))
    req('exec_output-offset-negative', owned('exec_output', exec=EX,
                                             stream='stdout', offset=-1))
    req('exec_output-offset-float', owned('exec_output', exec=EX,
                                          stream='stdout', offset=1.5))
    req('exec_output-offset-int64-max', None,
        raw='{"op":"exec_output","tenant":"t1","agent":"a1","id":"%s",'
            '"exec":"%s","stream":"stdout","offset":9223372036854775807}'
            % (SB, EX))
    req('exec_output-max_bytes-max', owned('exec_output', exec=EX,
                                           stream='stdout',
                                           max_bytes=SERVER_PAYLOAD))
    req('exec_output-max_bytes-over', owned('exec_output', exec=EX,
                                            stream='stdout',
                                            max_bytes=SERVER_PAYLOAD + 1))
    req('exec_output-max_bytes-zero', owned('exec_output', exec=EX,
                                            stream='stdout', max_bytes=0))
    req('exec_output-payload', owned('exec_output', exec=EX,
                                     stream='stdout'), payload=True)

    # -- archives: into and out of the workspace
    req('extract_archive', owned('extract_archive', path='proj'),
        payload=True)
    req('extract_archive-full', owned('extract_archive', request_id='r12',
                                      path='/workspace/proj/src',
                                      format='tar.gz'), payload=True)
    req('extract_archive-no-path', owned('extract_archive'), payload=True)
    req('extract_archive-empty', owned('extract_archive', path='x'))
    req('extract_archive-unknown-field', owned('extract_archive', path='x',
                                               mode=0o644), payload=True)
    req('export_archive', owned('export_archive', path='proj'))
    req('export_archive-full', owned('export_archive', request_id='r13',
                                     path='/workspace', format='tar.zst'))
    req('export_archive-payload', owned('export_archive'), payload=True)
    for desc, fmt in (('tar', 'tar'), ('gz', 'tar.gz'), ('zst', 'tar.zst'),
                      ('xz', 'tar.xz'), ('zip', 'zip'), ('upper', 'TAR'),
                      ('empty', ''), ('number', 1), ('long', 't' * 17)):
        req('archive-format-' + desc, owned('export_archive', format=fmt))
    for desc, path in (('workspace', '/workspace'),
                       ('workspace-slash', '/workspace/'), ('dot', '.'),
                       ('workspace-sub', '/workspace/a/b'),
                       ('workspace-dotdot', '/workspace/../etc'),
                       ('workspace-double-slash', '/workspace//a'),
                       ('workspace-prefix', '/workspacex/a'),
                       ('outside', '/etc'), ('empty', ''), ('number', 5)):
        req('archive-path-' + desc, owned('extract_archive', path=path),
            payload=True)
        req('file-path-' + desc, owned('read_file', path=path))

    # -- write_file and read_file: modes, and paths of every kind
    req('write_file', owned('write_file', path='hello.txt'), payload=True)
    req('write_file-empty', owned('write_file', path='empty'))
    req('write_file-full', owned('write_file', request_id='r6',
                                 path='sub/dir/f.txt', mode=0o755),
        payload=True)
    for desc, mode in (('zero', 0), ('max', 0o777), ('over', 0o1000),
                       ('suid', 0o4755), ('negative', -1), ('string', '644'),
                       ('float', 4.5)):
        req('write_file-mode-' + desc, owned('write_file', path='m',
                                             mode=mode), payload=True)
    req('write_file-unknown-field', owned('write_file', path='x', argv=[]))
    req('write_file-path-missing', owned('write_file'))
    req('write_file-path-number', owned('write_file', path=1))
    req('read_file', owned('read_file', path='out/r.txt'))
    req('read_file-request_id', owned('read_file', path='a/b',
                                      request_id='r7'))
    req('read_file-mode', owned('read_file', path='a', mode=0o644))
    req('read_file-payload', owned('read_file', path='a'), payload=True)
    req('read_file-path-missing', owned('read_file'))
    req('read_file-id-bad', owned('read_file', path='a', id=SB.upper()))
    for desc, path in PATHS:
        if '\x00' in path:
            continue    # the JSON loader refuses \u0000 (see below)
        req('write_file-path-' + desc, owned('write_file', path=path),
            payload=True)
        req('read_file-path-' + desc, owned('read_file', path=path))
    req('read_file-path-nul', None,
        raw='{"op":"read_file","tenant":"t1","agent":"a1","id":"%s",'
            '"path":"a\\u0000b"}' % SB)

    # -- snapshots, pause and resume, changes (op_snapshot.c, op_pause.c)
    SNAP = 'snap-0123456789abcdef01234567'
    req('snapshot_create', owned('snapshot_create'))
    req('snapshot_create-full', owned('snapshot_create', request_id='r20',
                                      epoch=EPOCH, ttl_s=SNAP_MAX_TTL,
                                      metadata={'why': 'x'},
                                      max_snapshots=SNAP_MAX_COUNT,
                                      max_bytes=SNAP_MAX_BYTES))
    req('snapshot_create-ttl-zero', owned('snapshot_create', ttl_s=0))
    req('snapshot_create-ttl-over', owned('snapshot_create',
                                          ttl_s=SNAP_MAX_TTL + 1))
    req('snapshot_create-count-over', owned('snapshot_create',
                                            max_snapshots=SNAP_MAX_COUNT + 1))
    req('snapshot_create-bytes-over', owned('snapshot_create',
                                            max_bytes=SNAP_MAX_BYTES + 1))
    req('snapshot_create-metadata-array', owned('snapshot_create',
                                                metadata=[1]))
    req('snapshot_create-metadata-big', owned('snapshot_create',
                                              metadata={'a': 'x' * 5000}))
    req('snapshot_create-unknown-field', owned('snapshot_create', path='x'))
    req('snapshot_create-payload', owned('snapshot_create'), payload=True)
    req('snapshot_list', {'op': 'snapshot_list', 'tenant': 't1'})
    req('snapshot_list-agent', {'op': 'snapshot_list', 'tenant': 't1',
                                'agent': 'a1', 'request_id': 'r21'})
    req('snapshot_list-unknown-field', {'op': 'snapshot_list',
                                        'tenant': 't1', 'id': SB})
    for op in ('snapshot_get', 'snapshot_delete'):
        o = dict(OWN, op=op, snapshot=SNAP)
        req(op, o)
        req(op + '-request_id', dict(o, request_id='r22'))
        req(op + '-unknown-field', dict(o, id=SB))
        req(op + '-payload', o, payload=True)
        for desc, val in (('upper', SNAP.upper()), ('short', SNAP[:-1]),
                          ('long', SNAP + '0'), ('sandbox', SB),
                          ('number', 1), ('traversal', '../snap-x')):
            req('%s-snapshot-%s' % (op, desc), dict(o, snapshot=val))
        o = dict(OWN, op=op)
        req(op + '-snapshot-missing', o)
    req('snapshot_get-manifest', dict(OWN, op='snapshot_get', snapshot=SNAP,
                                      manifest=True))
    req('snapshot_get-manifest-string', dict(OWN, op='snapshot_get',
                                             snapshot=SNAP, manifest='yes'))
    for op in ('pause', 'resume'):
        req(op, owned(op))
        req(op + '-epoch', owned(op, epoch=EPOCH, request_id='r23'))
        req(op + '-unknown-field', owned(op, ttl_s=1))
        req(op + '-payload', owned(op), payload=True)
    req('changes', owned('changes'))
    req('changes-full', owned('changes', request_id='r24', epoch=EPOCH,
                              since=SNAP, format='diff',
                              max_bytes=SERVER_PAYLOAD))
    for fmt in ('json', 'tar', 'zip', ''):
        req('changes-format-' + (fmt or 'empty'), owned('changes',
                                                        format=fmt))
    for desc, val in (('created', 'created'), ('sandbox', SB),
                      ('short', SNAP[:-1]), ('number', 3), ('empty', '')):
        req('changes-since-' + desc, owned('changes', since=val))
    for desc, val in (('zero', 0), ('over', SERVER_PAYLOAD + 1),
                      ('string', '1')):
        req('changes-max_bytes-' + desc, owned('changes', max_bytes=val))
    req('changes-unknown-field', owned('changes', path='x'))
    req('changes-payload', owned('changes'), payload=True)
    req('create-from_snapshot', owned('create', from_snapshot=SNAP))
    req('create-from_snapshot-profile', owned('create', from_snapshot=SNAP,
                                              profile='alt'))
    for desc, val in (('bad', 'snap-x'), ('sandbox', SB), ('number', 1)):
        req('create-from_snapshot-' + desc, owned('create',
                                                  from_snapshot=val))

    missing = set(OPS) - used_ops
    if missing:
        die('no fuzz_request seed for op(s) %s' % ', '.join(sorted(missing)))
    missing = FIELDS - used_fields
    if missing:
        die('no fuzz_request seed for field(s) %s'
            % ', '.join(sorted(missing)))
    return s


# ---- fuzz_paths --------------------------------------------------------------

def _max_path():
    # exactly VSB_MAX_PATH bytes in 200-byte components
    return ''.join('/' if i % 200 == 199 else 'b' for i in range(MAX_PATH))


PATHS = [
    # accepted
    ('plain', 'a'), ('file', 'file.txt'), ('nested', 'sub/dir/f.txt'),
    ('hidden', '.hidden'), ('dots-prefix', '..dots'),
    ('dots-inside', 'a..b/...'), ('space-utf8', 'with space/\u00fc-utf8'),
    ('name-max', 'a' * MAX_NAME), ('path-max', _max_path()),
    ('symlink-names', 'rootlink/etc/shadow'), ('race', 'race/bait'),
    ('high-bytes', '\u00ff\u0100'), ('tilde', '~/x'), ('backslash', 'a\\b'),
    ('trailing-dot-name', 'a./b.'), ('dash', '-rf'),
    # refused
    ('empty', ''), ('absolute', '/etc/passwd'), ('root', '/'),
    ('dotdot', '..'), ('dotdot-first', '../etc/passwd'),
    ('dotdot-inside', 'a/../b'), ('dotdot-escape', 'a/../../x'),
    ('dotdot-last', 'a/..'), ('dot', '.'), ('dot-first', './x'),
    ('dot-inside', 'a/./b'), ('dot-last', 'a/.'), ('double-slash', 'a//b'),
    ('trailing-slash', 'a/'), ('newline', 'a\nb'), ('tab', 'a\tb'),
    ('del', 'a\x7f'), ('escape', '\x1b[31m'), ('nul', 'a\x00b'),
    ('nul-last', 'a\x00'), ('name-over', 'a' * (MAX_NAME + 1)),
    ('name-over-nested', 'x' * (MAX_NAME + 1) + '/y'),
    ('path-over', 'a/' * (MAX_PATH // 2) + 'a'),
    ('sibling-sandbox', '../sb-0123456789abcdef01234567/root'),
    # the absolute form (accepted under /workspace/, refused elsewhere)
    ('ws-file', '/workspace/src/a.c'), ('ws-itself', '/workspace'),
    ('ws-itself-slash', '/workspace/'), ('ws-dotdot', '/workspace/../etc'),
    ('ws-double-slash', '/workspace//a'), ('ws-prefix', '/workspacex/a'),
    ('ws-short', '/work'), ('ws-nul', '/workspace/a\x00b'),
]


def paths_seeds():
    s = Seeds()
    for desc, path in PATHS:
        s.add(desc, path)
    return s


# ---- fuzz_frame --------------------------------------------------------------

def frame(json_bytes, payload=b'', json_len=None, payload_len=None):
    jl = len(json_bytes) if json_len is None else json_len
    pl = len(payload) if payload_len is None else payload_len
    return (MAGIC + jl.to_bytes(4, 'big') + pl.to_bytes(4, 'big')
            + json_bytes + payload)


def frame_seeds():
    s = Seeds()
    PING = b'{"op":"ping"}'
    EXEC = enc({'op': 'exec', 'tenant': 't1', 'agent': 'a1', 'id': SB,
                'argv': ['cat']}).encode()
    WRITE = enc({'op': 'write_file', 'tenant': 't1', 'agent': 'a1', 'id': SB,
                 'path': 'f.txt'}).encode()

    def add(name, data, chunk=255, flags=0):
        # byte 0: chunk size - 1; byte 1: bit 0 server limits, bit 1 steal
        s.add(name, bytes([chunk, flags]) + data)

    add('ping', frame(PING))
    add('ping-steal', frame(PING), flags=2)
    add('ping-server-limits', frame(PING), flags=1)
    add('exec-stdin', frame(EXEC, b'hello\n'))
    add('write-payload', frame(WRITE, bytes(range(256))), flags=3)
    add('empty-payload', frame(WRITE))
    add('one-byte-json', frame(b'x'))
    add('json-with-nul', frame(b'{"op":"p\x00ing"}', b'\x00'))
    # the same stream split at awkward points
    stream = frame(PING) + frame(EXEC, b'in') + frame(WRITE, b'\x00' * 40)
    for chunk in (1, 2, 3, 4, 5, 11, 12, 13, 16, 64, 256):
        add('three-frames-chunk-%d' % chunk, stream, chunk=chunk - 1)
    add('three-frames-steal-chunk-7', stream, chunk=6, flags=2)
    add('frame-then-garbage', frame(PING) + b'GET / HTTP/1.0\r\n\r\n')
    add('frame-then-partial', frame(PING) + frame(PING)[:7], chunk=0)
    # truncated anywhere
    for cut in (0, 1, 3, 4, 8, 11, 12, 13):
        add('truncated-at-%d' % cut, frame(EXEC, b'ab')[:cut], chunk=2)
    add('truncated-in-payload', frame(EXEC, b'abcdef')[:-2])
    # magic
    for i, bad in enumerate((b'XSB1', b'VXB1', b'VSX1', b'VSB2', b'vsb1',
                             b'VSB\x00')):
        add('bad-magic-%d' % i, bad + frame(PING)[4:], chunk=0)
    add('http-request', b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
    # lengths at and past each bound, small and server limits
    add('json-len-zero', frame(b'', json_len=0))
    add('json-len-small-max', frame(b'{' + b' ' * 4094 + b'}'))
    add('json-len-small-over', frame(b'{' + b' ' * 4095 + b'}'))
    add('payload-small-max', frame(PING, b'p' * 8192))
    add('payload-small-over', frame(PING, b'p' * 8193))
    add('json-len-server-max', frame(b'{' + b' ' * (MAX_JSON - 2) + b'}'),
        flags=1)
    add('json-len-server-over', frame(PING, json_len=MAX_JSON + 1), flags=1)
    add('payload-server-announced', frame(PING, b'abc',
                                          payload_len=SERVER_PAYLOAD),
        flags=1)
    add('payload-server-over', frame(PING, payload_len=SERVER_PAYLOAD + 1),
        flags=1)
    add('payload-protocol-max', frame(PING, payload_len=MAX_PAYLOAD), flags=1)
    add('lengths-all-ones', frame(PING, json_len=0xffffffff,
                                  payload_len=0xffffffff), flags=1)
    add('json-len-announced-only', frame(b'{"op"', json_len=4000), chunk=0)
    add('payload-grows', frame(PING, b'g' * 6000), chunk=255)
    # split mode (bit 2): the server stops at the JSON to pick the op's way
    ARCHIVE = enc({'op': 'extract_archive', 'tenant': 't1', 'agent': 'a1',
                   'id': SB}).encode()
    add('split-exec-stdin', frame(EXEC, b'hello\n'), flags=4)
    add('split-archive', frame(ARCHIVE, b'\x1f\x8b' + b'z' * 100), flags=5)
    add('split-archive-announced', frame(ARCHIVE, b'abc',
                                         payload_len=MAX_STREAM), flags=5)
    add('split-no-payload', frame(PING), flags=4)
    add('split-three-frames-chunk-5', stream, chunk=4, flags=4)
    return s


# ---- fuzz_config -------------------------------------------------------------

def config_seeds():
    s = Seeds()
    used = set()

    def add(name, text):
        for line in text.splitlines():
            k = line.split('#', 1)[0].split('=', 1)[0].strip()
            used.add(k)
        s.add(name, text)

    add('shipped', CONF_FILE)
    add('empty', '')
    add('comments-only', '# nothing\n\n   # indented\n')
    add('crlf', 'max_pids = 300\r\nlog_level = debug\r\n')
    add('tabs', '\tmax_pids\t=\t300\t# tabbed\n')
    add('no-final-newline', 'log_level = warn')
    add('every-key', '\n'.join('%s = %s' % kv for kv in (
        ('socket', '/run/x/h.sock'), ('socket_group', '33'),
        ('socket_mode', '0600'), ('allowed_uids', '0 33 1000'),
        ('state_dir', '/var/lib/x/'), ('cgroup_name', 'veto-sb.1'),
        ('cgroup_mode', 'v2'), ('uid_base', '200000'),
        ('max_memory_mb', '1024'), ('max_pids', '100'),
        ('max_cpu_percent', '100'), ('max_disk_mb', '512'),
        ('max_timeout_s', '60'), ('max_output_bytes', '65536'),
        ('max_ttl_s', '600'), ('max_sandboxes', '8'),
        ('max_file_bytes', '1048576'), ('max_execs_per_sandbox', '2'),
        ('max_archive_bytes', '1073741824'), ('max_background_execs', '2'),
        ('default_memory_mb', '128'), ('default_pids', '10'),
        ('default_cpu_percent', '50'), ('default_disk_mb', '64'),
        ('default_timeout_s', '10'), ('default_output_bytes', '4096'),
        ('default_ttl_s', '60'), ('profile', 'alt /'),
        ('max_idle_s', '600'), ('default_idle_s', '60'),
        ('ended_retention_s', '3600'), ('ended_max', '16'),
        ('log_level', 'error'))) + '\n')
    # numeric keys: at 1, at and past the compiled ceiling, not numbers
    for k, cap in sorted(ABS.items()):
        # a default above its max is another error: raise the max too
        pre = ''
        if k.startswith('default_'):
            pre = 'max_%s = %d\n' % (k[8:], ABS['max_' + k[8:]])
            if k == 'default_output_bytes':
                pre = 'max_output_bytes = %d\n' % (MAX_PAYLOAD // 2)
        top = cap
        if k in ('max_output_bytes', 'default_output_bytes'):
            top = MAX_PAYLOAD // 2
        if k.startswith('max_') and 'default_' + k[4:] in ABS:
            add('%s-one' % k, 'default_%s = 1\n%s = 1\n' % (k[4:], k))
        else:
            add('%s-one' % k, '%s = 1\n' % k)
        add('%s-max' % k, pre + '%s = %d\n' % (k, top))
        add('%s-over' % k, pre + '%s = %d\n' % (k, cap + 1))
        add('%s-zero' % k, '%s = 0\n' % k)
    for desc, val in (('negative', '-1'), ('junk', '12a'), ('hex', '0x10'),
                      ('space', '1 2'), ('u64-max', '18446744073709551615'),
                      ('u64-over', '18446744073709551616'),
                      ('long', '9' * 40), ('plus', '+5')):
        add('number-' + desc, 'max_pids = %s\n' % val)
    add('default-over-max', 'max_pids = 10\ndefault_pids = 11\n')
    add('default-over-builtin-max', 'default_pids = 2000\n')
    add('max-under-builtin-default', 'max_memory_mb = 100\n')
    add('ttl-default-over-max', 'max_ttl_s = 60\n')
    add('idle-default-over-max', 'max_idle_s = 60\n')
    add('background-over-execs', 'max_execs_per_sandbox = 2\n'
        'max_background_execs = 3\n')
    add('background-follows-execs', 'max_execs_per_sandbox = 2\n')
    add('output-half-payload', 'max_output_bytes = %d\n' % (MAX_PAYLOAD // 2))
    add('output-over-half-payload', 'max_output_bytes = %d\n'
        % (MAX_PAYLOAD // 2 + 1))
    # uid range
    add('uid_base-min', 'uid_base = 100000\n')
    add('uid_base-under', 'uid_base = 99999\n')
    add('uid_base-fits', 'uid_base = %d\nmax_sandboxes = 1\n'
        % (0xffffffff - 65536 - 1))
    add('uid_base-overflows', 'uid_base = 4250000000\nmax_sandboxes = 1024\n')
    add('uid_base-overflows-via-sandboxes',
        'max_sandboxes = 1024\nuid_base = 4294000000\n')
    add('uid_base-uid-max', 'uid_base = 4294967295\n')
    add('uid_base-junk', 'uid_base = 1e9\n')
    # socket
    add('socket-relative', 'socket = run/h.sock\n')
    add('socket-max', 'socket = /' + 's' * 106 + '\n')
    add('socket-over', 'socket = /' + 's' * 107 + '\n')
    add('socket_group-number', 'socket_group = 0\n')
    add('socket_group-max', 'socket_group = 4294967294\n')
    add('socket_group-minus-one', 'socket_group = 4294967295\n')
    add('socket_group-name', 'socket_group = www-data\n')
    for desc, val in (('0660', '0660'), ('0600', '0600'), ('660', '660'),
                      ('others', '0666'), ('no-owner-w', '0460'),
                      ('setuid', '04660'), ('all', '07777'), ('digit8', '0680'),
                      ('long', '000000000000000660'), ('huge', '77777777777'),
                      ('letters', 'rw')):
        add('socket_mode-' + desc, 'socket_mode = %s\n' % val)
    add('allowed_uids-several', 'allowed_uids = 0 33\t1000\n')
    add('allowed_uids-max', 'allowed_uids = %s\n'
        % ' '.join(str(i) for i in range(MAX_UIDS)))
    add('allowed_uids-over', 'allowed_uids = %s\n'
        % ' '.join(str(i) for i in range(MAX_UIDS + 1)))
    add('allowed_uids-name', 'allowed_uids = 0 root\n')
    add('allowed_uids-minus-one', 'allowed_uids = 4294967295\n')
    add('allowed_uids-blank-tokens', 'allowed_uids = \t 0 \t\n')
    # state_dir
    for desc, val in (('plain', '/var/lib/vs'), ('trailing-slashes', '/x///'),
                      ('root', '/'), ('slashes', '///'),
                      ('relative', 'var/lib'), ('dotdot-inside', '/a/../b'),
                      ('dotdot-last', '/a/..'), ('dot', '/.'),
                      ('dotdot-root', '/..'), ('dot-inside', '/a/./b'),
                      ('dotdot-name', '/usr/..x/y'),
                      ('max', '/' + 'd' * (4096 - 64 - 2)),
                      ('over', '/' + 'd' * (4096 - 64 - 1))):
        add('state_dir-' + desc, 'state_dir = %s\n' % val)
    # cgroup
    for desc, val in (('plain', 'veto'), ('max', 'c' * 63), ('over', 'c' * 64),
                      ('dot', '.'), ('dotdot', '..'), ('slash', 'a/b'),
                      ('chars', 'a_b-c.d'), ('space', 'a b')):
        add('cgroup_name-' + desc, 'cgroup_name = %s\n' % val)
    for val in ('auto', 'v1', 'v2', 'v3', 'V1'):
        add('cgroup_mode-' + val, 'cgroup_mode = %s\n' % val)
    for val in ('error', 'warn', 'info', 'debug', 'trace', 'INFO'):
        add('log_level-' + val, 'log_level = %s\n' % val)
    for val in ('on', 'off', 'yes', 'ON', '1'):
        add('test_clock-' + val, 'test_clock = %s\n' % val)
    add('test_clock-duplicate', 'test_clock = on\ntest_clock = off\n')
    # profiles
    add('profile-alt', 'profile = alt /\n')
    add('profile-default-redefined', 'profile = default /\nprofile = b /\n')
    add('profile-duplicate', 'profile = alt /\nprofile = alt /\n')
    add('profile-extra-word', 'profile = alt / x\n')
    add('profile-no-dir', 'profile = alt\n')
    add('profile-bad-name', 'profile = a/b /\n')
    add('profile-name-max', 'profile = %s /\n' % ('p' * PROFILE_NAME_LEN))
    add('profile-name-over', 'profile = %s /\n' % ('p' * (PROFILE_NAME_LEN + 1)))
    add('profile-relative-dir', 'profile = alt srv/img\n')
    add('profile-no-usr', 'profile = alt /nonexistent-veto-profile\n')
    add('profile-dir-long', 'profile = alt /%s\n' % ('r' * 4000))
    add('profile-tabs', 'profile =\talt\t/\t\n')
    add('profiles-max', ''.join('profile = p%d /\n' % i
                                for i in range(MAX_PROFILES - 1)))
    add('profiles-over', ''.join('profile = p%d /\n' % i
                                 for i in range(MAX_PROFILES)))
    # network egress
    on = 'egress = on\negress_user = veto-egress\n'
    add('egress-on', on)
    add('egress-on-no-user', 'egress = on\n')
    add('egress-off', 'egress = off\n')
    add('egress-yes', 'egress = yes\n')
    add('egress-every-key', on + ''.join('%s = %s\n' % kv for kv in (
        ('egress_proxy', '/usr/lib/veto-sandbox/egress-proxy'),
        ('egress_netns', '/run/netns/egress'), ('egress_nft', '/usr/sbin/nft'),
        ('egress_resolver', '192.0.2.53'),
        ('egress_allow_range', '10.20.0.0/16'),
        ('egress_allow_range', '2001:db8::/32'),
        ('egress_max_entries', '16'), ('egress_max_connections', '32'),
        ('egress_max_bytes_out', '1048576'),
        ('egress_max_bytes_in', '1048576'))))
    for k in ('egress_credentials', 'egress_upstream_ca',
              'egress_trust_roots'):
        add(k, on + '%s = /etc/veto-sandbox/x\n' % k)
    for k in ('egress_proxy', 'egress_netns', 'egress_nft',
              'egress_credentials'):
        add(k + '-relative', '%s = usr/sbin/x\n' % k)
        add(k + '-dotdot', '%s = /usr/../tmp/x\n' % k)
        add(k + '-long', '%s = /%s\n' % (k, 'p' * (4096 - len(k) - 5)))
    for desc, val in (('plain', 'veto-egress'), ('max', 'u' * 63),
                      ('over', 'u' * 64), ('slash', 'a/b'), ('dotdot', '..')):
        add('egress_user-' + desc, 'egress_user = %s\n' % val)
    for desc, val in (('v4', '192.0.2.53'), ('v4-port', '192.0.2.53:5353'),
                      ('list', '[2001:db8::53]:53,192.0.2.53'),
                      ('name', 'dns.example.test'), ('max', '1' * 255),
                      ('over', '1' * 256)):
        add('egress_resolver-' + desc, 'egress_resolver = %s\n' % val)
    for desc, val in (('v4', '10.20.0.0/16'), ('v6', '2001:db8::/32'),
                      ('v4-all', '0.0.0.0/0'), ('v4-bits-over', '10.0.0.0/33'),
                      ('v6-bits-over', '::/129'), ('no-bits', '10.0.0.0'),
                      ('empty-bits', '10.0.0.0/'), ('name', 'x.test/8'),
                      ('junk-bits', '10.0.0.0/8x'), ('long-addr', '1' * 70 + '/8')):
        add('egress_allow_range-' + desc, 'egress_allow_range = %s\n' % val)
    add('egress_allow_range-max', ''.join(
        'egress_allow_range = 10.%d.0.0/16\n' % i for i in range(MAX_RANGES)))
    add('egress_allow_range-over', ''.join(
        'egress_allow_range = 10.%d.0.0/16\n' % i
        for i in range(MAX_RANGES + 1)))

    # image profiles (the store is opened at start, not by the parser)
    dg = 'sha256:' + 'ab' * 32
    add('image_profile', 'image_profile = py %s\n' % dg)
    add('image_profile-default', 'image_profile = default %s\n' % dg)
    add('image_profile-tag', 'image_profile = py debian:12\n')
    add('image_profile-short-digest', 'image_profile = py sha256:abc\n')
    add('image_profile-upper-hex', 'image_profile = py sha256:%s\n' % ('AB' * 32))
    add('image_profile-no-digest', 'image_profile = py\n')
    add('image_profile-three-words', 'image_profile = py %s extra\n' % dg)
    add('image_profile-and-profile', 'profile = py /\nimage_profile = py %s\n' % dg)
    add('image_profile-twice', 'image_profile = py %s\nimage_profile = py %s\n' % (dg, dg))
    add('image_store', 'image_store = /var/lib/veto-sandbox/images\n')
    add('image_store-relative', 'image_store = var/images\n')
    add('image_store-dotdot', 'image_store = /var/../images\n')
    add('image_store-long', 'image_store = /%s\n' % ('p' * 4090))

    # syntax
    add('duplicate-key', 'max_pids = 10\nmax_pids = 10\n')
    add('unknown-key', 'max_swap_mb = 10\n')
    add('no-equals', 'max_pids 10\n')
    add('no-value', 'max_pids =\n')
    add('no-value-comment', 'max_pids = # none\n')
    add('no-key', '= 10\n')
    add('two-equals', 'socket = /a=b\n')
    add('line-max', 'socket = /x' + ' ' * (4096 - 11) + '\n')
    add('line-over', '#' * 4097 + '\n')
    add('control-char', 'log_level = info\x01\n')
    add('nul-byte', 'log_level = info\x00\n')
    add('nul-byte-in-comment', '# \x00\nlog_level = info\n')
    add('control-char-in-comment', '# \x1b[31m\n')
    add('only-equals', '=\n')
    add('error-on-line-3', '\n# x\nbogus\n')

    missing = set(CONF_KEYS) - used
    if missing:
        die('no fuzz_config seed for key(s) %s' % ', '.join(sorted(missing)))
    return s


# ---- dictionaries ------------------------------------------------------------

def dict_entry(b):
    if isinstance(b, str):
        b = b.encode('utf-8')
    out = ''
    for c in b:
        if c in (0x22, 0x5c) or c < 0x20 or c > 0x7e:
            out += '\\x%02x' % c
        else:
            out += chr(c)
    return '"%s"' % out


def dictionary(title, entries):
    seen, lines = set(), ['# %s' % title,
                          '# Generated by t/fuzz/gen-corpus.py: edit that.']
    for e in entries:
        d = dict_entry(e)
        if d not in seen and 0 < len(e) <= 64:
            seen.add(d)
            lines.append(d)
    return '\n'.join(lines) + '\n'


def request_dict():
    e = ['{', '}', '[', ']', ':', ',', '"', '""', '{}', '[]', 'true', 'false',
         'null', '\\u0000', '\\u0001', '\\u001f', '\\u007f', '\\ud800',
         '\\udc00', '\\ud83d\\ude00', '\\"', '\\\\', '\\/', '\\n', '\\t',
         '\u00e9', '-', '.', 'e', 'E', '+', '0', '1', '-1', '1.5', '1e3',
         '9223372036854775807', '-9223372036854775808',
         '18446744073709551616', '511', '512', '493', '420']
    for op in OPS:
        e += ['"%s"' % op, '"op":"%s"' % op]
    for f in sorted(FIELDS):
        e += ['"%s"' % f, '"%s":' % f]
    for k, v in CEIL.items():
        e += [str(v), str(v + 1)]
    e += [str(MAX_TTL), str(MAX_TTL + 1), str(MAX_ID), str(MAX_ENV),
          str(MAX_ARGV), '"%s"' % SB, '"%s"' % EPOCH, '"sb-"', '"t1"', '"a1"',
          '"/workspace"',
          '"/"', '"."', '".."', '"../"', '"a/b"', '"none"', '"default"',
          '"alt"', '"/bin/sh"', '"-c"', '"*.', ':443', ':0', ':65536',
          '[2001:db8::1]', '192.0.2.1', 'example.test', '..', str(NET_ENTRIES),
          str(NET_ENTRIES + 1), str(MAX_NET_ENTRY), str(MAX_NET_BYTES)]
    return dictionary('fuzz_request: JSON tokens, ops, fields, bounds', e)


def frame_dict():
    e = [MAGIC, MAGIC[:3]]
    for n in (0, 1, 12, 4095, 4096, 4097, 8192, 8193, MAX_JSON, MAX_JSON + 1,
              SERVER_PAYLOAD, SERVER_PAYLOAD + 1, MAX_PAYLOAD,
              MAX_PAYLOAD + 1, 0x7fffffff, 0x80000000, 0xffffffff):
        e.append(n.to_bytes(4, 'big'))
    e += [b'{"op":"ping"}', b'{}', b'\x00', b'\xff']
    return dictionary('fuzz_frame: magic, big-endian lengths at the bounds',
                      e)


def config_dict():
    e = [' = ', '=', '#', '\n', '\r\n', '\t', ' ', '/', '//', '/..', '/../',
         '.', '..', '0', '1', '-1', '+1', '0x', '18446744073709551615',
         '18446744073709551616', '4294967295', '4294967294', '100000',
         '99999', '0660', '0600', '0666', '07777', 'auto', 'v1', 'v2',
         'error', 'warn', 'info', 'debug', 'default', 'root', 'www-data']
    for k in CONF_KEYS:
        e += [k, k + ' = ']
    for v in ABS.values():
        e += [str(v), str(v + 1)]
    return dictionary('fuzz_config: keys, separators, values at the bounds',
                      e)


def paths_dict():
    e = ['/', '//', '.', '..', './', '../', '/./', '/../', '/.', '/..', '\x00',
         '\x01', '\x1f', '\x7f', '\n', '\t', '\x1b', ' ', '\\', '\u00fc',
         '\xff', 'a' * 64]
    return dictionary('fuzz_paths: separators, dot names, control bytes', e)


# ---- writing -----------------------------------------------------------------

def generate():
    """{relative path: bytes} of everything this script owns."""
    out = {}
    for target, seeds in (('fuzz_request', request_seeds()),
                          ('fuzz_frame', frame_seeds()),
                          ('fuzz_config', config_seeds()),
                          ('fuzz_paths', paths_seeds())):
        for name, data in seeds.files.items():
            out[os.path.join('corpus', target, name)] = data
    for target, text in (('fuzz_request', request_dict()),
                         ('fuzz_frame', frame_dict()),
                         ('fuzz_config', config_dict()),
                         ('fuzz_paths', paths_dict())):
        out[os.path.join('dict', target + '.dict')] = text.encode()
    for target, (seeds, entries) in module_corpus.TARGETS.items():
        for name, data in seeds().items():
            out[os.path.join('corpus', target, name)] = data
        out[os.path.join('dict', target + '.dict')] = dictionary(
            '%s: %s' % (target, module_corpus.TITLES[target]),
            entries()).encode()
    return out


def present():
    """{relative path: bytes} of the generated files on disk."""
    out = {}
    for target in TARGETS:
        d = os.path.join(FUZZ, 'corpus', target)
        if os.path.isdir(d):
            for name in os.listdir(d):
                if not name.startswith(KEEP_PREFIX):
                    with open(os.path.join(d, name), 'rb') as f:
                        out[os.path.join('corpus', target, name)] = f.read()
        p = os.path.join(FUZZ, 'dict', target + '.dict')
        if os.path.exists(p):
            with open(p, 'rb') as f:
                out[os.path.join('dict', target + '.dict')] = f.read()
    return out


def main():
    want = generate()
    have = present()

    if sys.argv[1:] == ['--check']:
        diff = sorted(p for p in set(want) | set(have)
                      if want.get(p) != have.get(p))
        for p in diff[:20]:
            print('gen-corpus: t/fuzz/%s is %s' % (
                p, 'missing' if p not in have else
                'stale' if p in want else 'not generated any more'))
        if diff:
            print('gen-corpus: %d file(s) differ: run t/fuzz/gen-corpus.py'
                  % len(diff))
            return 1
        print('gen-corpus: %d files up to date' % len(want))
        return 0

    if sys.argv[1:]:
        sys.stderr.write(__doc__)
        return 2

    for p in set(have) - set(want):
        os.unlink(os.path.join(FUZZ, p))
    for p, data in sorted(want.items()):
        full = os.path.join(FUZZ, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if have.get(p) != data:
            with open(full, 'wb') as f:
                f.write(data)
    counts = {}
    for p in want:
        if p.startswith('corpus'):
            t = p.split(os.sep)[1]
            counts[t] = counts.get(t, 0) + 1
    print('gen-corpus: ' + ', '.join('%s %d seeds' % kv
                                     for kv in sorted(counts.items()))
          + ', %d dictionaries' % len(TARGETS))
    return 0


if __name__ == '__main__':
    sys.exit(main())
