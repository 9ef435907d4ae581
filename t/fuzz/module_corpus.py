"""Seeds and dictionaries of the module's fuzz targets that
t/fuzz/gen-corpus.py generates (fuzz_module_jwt, fuzz_module_hash,
fuzz_module_helper_reply, fuzz_module_mcp; fuzz_module_parsers keeps
committed seeds).

Each target's first input byte picks what it parses (the comment at the
top of t/fuzz/<target>.c); seeds are that byte and the input.  The keys,
the policy and the configuration they meet are the harness's own
(fuzz_module_jwt.c's HS256 secret signs the tokens here).
"""

import base64
import hashlib
import hmac
import json

# fuzz_module_jwt.c
HS_SECRET = b'fuzz-secret-0123456789abcdef0123456789'
EC_X = 'n11thFh4aJiRZ0d4BHyWvf0kYzW4lOFJK6TWKcsAwlM'
EC_Y = 'CN6IoQL3oaD7_KQrxdIu53j6yehxfY_i0CG1X4Eifuk'
RSA_N = ('u9uSzDWAxEF52rbvFHmObBAtlk487fkIUjvCFOM2PBIs4gWVewKoWeT6MGX2'
         'RV_OB_wMLlb3RGWY9x-h_0-2duxB9NPUQKURPHSSnu4H1zK6PeXy0Bdgpfut'
         'vSIlo8bfypAemAMJHh3V9WDdkvGMBuMhaphGsbxRCV1k21kuuZx9947NH44j'
         'H_Br74HSkiWSp-Bxvsuxi6u_7jXExktVTO_OYs5k-KE5U4mAbzn-jpyP0aW0'
         'MvnpEMs5afdafLUNociFKj3A5rKrlUDW8z8O1rW4OXTjE8j5aqWU5LdW2nEU'
         'p1HPK6f3JaShynzcCNiSLSQJ5gR2FegYj09KOvcJ1w')
NOW = 1800000000            # the harness's clock
ISS = 'https://issuer.test'
AUD = 'veto-sandbox'
SCOPES = ['sandbox:create', 'sandbox:exec', 'sandbox:files',
          'approvals:review', 'audit:read', 'sandbox:network',
          'admin:revoke']


def enc(obj):
    return json.dumps(obj, separators=(',', ':'), sort_keys=True).encode()


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b'=')


def hs256(header, claims):
    si = b64u(header) + b'.' + b64u(claims)
    mac = hmac.new(HS_SECRET, si, hashlib.sha256).digest()
    return si + b'.' + b64u(mac)


def claims(**kw):
    c = {'sub': 'a1', 'tenant': 'acme', 'iss': ISS, 'aud': AUD,
         'exp': NOW + 600, 'iat': NOW - 10, 'nbf': NOW - 10,
         'jti': 'jti-1', 'scope': ' '.join(SCOPES)}
    for k, v in kw.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    return enc(c)


HS = enc({'alg': 'HS256', 'kid': 'hs', 'typ': 'JWT'})


def jwt_seeds():
    s = {}

    def header(name, value):
        s['auth-' + name] = b'\x00' + value

    def signed(name, hdr, cl):
        s['claims-' + name] = b'\x01' + hdr + b'\x00' + cl

    def jwks(name, doc):
        s['jwks-' + name] = b'\x02' + (doc if isinstance(doc, bytes)
                                       else enc(doc))

    def forged(alg, kid, sig):
        """a token for the key kid whose signature is sig (not its own)"""
        return (b'Bearer ' + b64u(enc({'alg': alg, 'kid': kid})) + b'.'
                + b64u(claims()) + b'.' + b64u(sig))

    good = hs256(HS, claims())
    header('good', b'Bearer ' + good)
    header('good-kid', b'Bearer ' + hs256(enc({'alg': 'HS256', 'kid': 'hs'}),
                                          claims()))
    header('lowercase-spaces', b'bearer   ' + good + b'   ')
    header('basic', b'Basic dXNlcjpwYXNz')
    header('empty', b'Bearer ')
    header('short', b'Bear')
    header('bad-sig', b'Bearer ' + good[:-4] + b'AAAA')
    header('no-sig', b'Bearer ' + good[:good.rindex(b'.') + 1])
    header('two-parts', b'Bearer ' + good[:good.rindex(b'.')])
    header('four-parts', b'Bearer ' + good + b'.x')
    header('bad-char', b'Bearer ' + good.replace(b'.', b'+', 1))
    header('padded', b'Bearer ' + good + b'==')
    header('alg-none', b'Bearer ' + b64u(enc({'alg': 'none'})) + b'.'
           + b64u(claims()) + b'.x')
    header('header-not-json', b'Bearer ' + b64u(b'{"alg":') + b'.'
           + b64u(claims()) + b'.AAAA')
    header('claims-not-json', b'Bearer ' + hs256(HS, b'[1,2]'))
    header('claims-not-b64', b'Bearer ' + b64u(HS) + b'.A.' + b'AAAA')
    header('es256-garbage', forged('ES256', 'ec', b'\x01' * 64))
    header('es256-zero', forged('ES256', 'ec', b'\x00' * 64))
    header('es256-short', forged('ES256', 'ec', b'\x01' * 63))
    header('rs256-garbage', forged('RS256', 'rs', b'\x02' * 256))
    header('rs256-short', forged('RS256', 'rs', b'\x02' * 255))
    header('sig-too-long', b'Bearer ' + b64u(HS) + b'.' + b64u(claims())
           + b'.' + b64u(b'\x03' * 2100))
    header('sig-lone-sextet', b'Bearer ' + b64u(HS) + b'.' + b64u(claims())
           + b'.AAAAA')
    header('too-large', b'Bearer ' + b'A' * 8200 + b'.B.C')

    signed('good', HS, claims())
    signed('kid-hs', enc({'alg': 'HS256', 'kid': 'hs'}), claims())
    signed('kid-unknown', enc({'alg': 'HS256', 'kid': 'nope'}), claims())
    signed('kid-number', enc({'alg': 'HS256', 'kid': 7}), claims())
    signed('no-kid-many-keys', enc({'alg': 'HS256'}), claims())
    signed('claims-array', HS, b'[]')
    signed('claims-dup', HS, b'{"sub":"a","sub":"b"}')
    signed('scope-array-only-numbers', HS, claims(scope=[1, 2]))
    signed('scope-empty', HS, claims(scope=''))
    signed('aud-array-empty', HS, claims(aud=[]))
    signed('sub-number', HS, claims(sub=5))
    signed('jti-empty', HS, claims(jti=''))
    signed('exp-real-huge', HS, claims(exp=1e300))
    signed('nbf-real', HS, claims(nbf=NOW - 0.5))
    signed('alg-pin', enc({'alg': 'RS256', 'kid': 'hs'}), claims())
    signed('alg-number', enc({'alg': 256, 'kid': 'hs'}), claims())
    signed('crit', enc({'alg': 'HS256', 'kid': 'hs', 'crit': ['b64']}),
           claims())
    signed('dup-key', b'{"alg":"HS256","alg":"none"}', claims())
    signed('agent', HS, claims(tenant='t1', sub='a1'))
    signed('unknown-tenant', HS, claims(tenant='nobody'))
    signed('aud-array', HS, claims(aud=['x', AUD, 3]))
    signed('aud-wrong', HS, claims(aud=['x']))
    signed('aud-number', HS, claims(aud=1))
    signed('scope-array', HS, claims(scope=['sandbox:exec', 5,
                                            'audit:read x']))
    signed('scope-number', HS, claims(scope=5))
    signed('scope-spaces', HS, claims(scope='   sandbox:files   '))
    signed('no-scope', HS, claims(scope=None))
    signed('expired', HS, claims(exp=NOW - 31))
    signed('leeway', HS, claims(exp=NOW - 5))
    signed('exp-real', HS, claims(exp=NOW + 0.5))
    signed('exp-huge', HS, claims(exp=95617584001))
    signed('exp-negative', HS, claims(exp=-1))
    signed('exp-string', HS, claims(exp='soon'))
    signed('exp-missing', HS, claims(exp=None))
    signed('nbf-future', HS, claims(nbf=NOW + 100))
    signed('nbf-bad', HS, claims(nbf='x'))
    signed('iat-future', HS, claims(iat=NOW + 100))
    signed('iat-bad', HS, claims(iat=[]))
    signed('iat-missing', HS, claims(iat=None))
    signed('iss-wrong', HS, claims(iss='https://evil.test'))
    signed('iss-missing', HS, claims(iss=None))
    signed('jti-number', HS, claims(jti=5))
    signed('jti-long', HS, claims(jti='j' * 129))
    signed('sub-missing', HS, claims(sub=None))
    signed('sub-space', HS, claims(sub='a b'))
    signed('sub-max', HS, claims(sub='s' * 128))
    signed('sub-long', HS, claims(sub='s' * 129))
    signed('sub-unicode', HS, claims(sub='\u00e9'))
    signed('tenant-empty', HS, claims(tenant=''))
    signed('tenant-missing', HS, claims(tenant=None))
    signed('not-object', HS, b'"claims"')
    signed('not-json', HS, b'{"sub":')
    signed('nul-in-string', HS, b'{"sub":"a\\u0000b"}')
    s['claims-bare'] = b'\x01' + claims()

    ec = {'kty': 'EC', 'kid': 'ec', 'crv': 'P-256', 'x': EC_X, 'y': EC_Y}
    rsa = {'kty': 'RSA', 'kid': 'rs', 'e': 'AQAB', 'n': RSA_N}

    def w(**kw):
        k = dict(kw.pop('base'))
        for a, v in kw.items():
            if v is None:
                k.pop(a, None)
            else:
                k[a] = v
        return k

    jwks('both', {'keys': [ec, rsa]})
    jwks('ec-alg', {'keys': [w(base=ec, alg='ES256', use='sig')]})
    jwks('ec-alg-384', {'keys': [w(base=ec, alg='ES384')]})
    jwks('ec-crv-384', {'keys': [w(base=ec, crv='P-384')]})
    jwks('ec-short-x', {'keys': [w(base=ec, x=EC_X[:-2])]})
    jwks('ec-bad-b64', {'keys': [w(base=ec, y='!!!')]})
    jwks('ec-off-curve', {'keys': [w(base=ec, y=EC_X)]})
    jwks('ec-no-crv', {'keys': [w(base=ec, crv=None)]})
    jwks('rsa-alg-512', {'keys': [w(base=rsa, alg='RS512',
                                    key_ops=['verify'], x5c=['MII'])]})
    jwks('rsa-alg-es', {'keys': [w(base=rsa, alg='ES256')]})
    jwks('rsa-alg-bad', {'keys': [w(base=rsa, alg='PS256')]})
    jwks('rsa-small', {'keys': [w(base=rsa, n=RSA_N[:170])]})
    jwks('rsa-no-e', {'keys': [w(base=rsa, e=None)]})
    jwks('rsa-e-zero', {'keys': [w(base=rsa, e='AA')]})
    jwks('private', {'keys': [w(base=rsa, d='AQAB')]})
    jwks('use-enc', {'keys': [w(base=rsa, use='enc'), ec]})
    jwks('no-kid', {'keys': [w(base=ec, kid=None)]})
    jwks('empty-kid', {'keys': [w(base=ec, kid='')]})
    jwks('dup-kid', {'keys': [ec, w(base=rsa, kid='ec')]})
    jwks('oct', {'keys': [{'kty': 'oct', 'kid': 'o', 'k': 'c2VjcmV0'}]})
    jwks('no-kty', {'keys': [w(base=ec, kty=None)]})
    jwks('number-field', {'keys': [w(base=ec, x=5)]})
    jwks('not-object', {'keys': [5]})
    jwks('empty', {'keys': []})
    jwks('no-keys', {'key': [ec]})
    jwks('keys-object', {'keys': ec})
    jwks('array', [ec])
    jwks('dup-member', b'{"keys":[],"keys":[]}')
    jwks('truncated', enc({'keys': [ec]})[:40])
    jwks('empty-file', b'')
    return s


def jwt_dict():
    e = ['Bearer ', 'bearer ', 'Basic ', '.', '..', '-', '_', '=', 'eyJ',
         'eyJhbGciOiJIUzI1NiJ9', 'eyJhbGciOiJub25lIn0', 'AQAB', 'AA']
    for k in ('alg', 'kid', 'typ', 'crit', 'sub', 'tenant', 'iss', 'aud',
              'exp', 'nbf', 'iat', 'jti', 'scope', 'keys', 'kty', 'use',
              'crv', 'x', 'y', 'n', 'e', 'd', 'key_ops', 'x5c'):
        e += ['"%s":' % k]
    for v in ('HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'ES256',
              'ES384', 'ES512', 'none', 'PS256', 'hs', 'ec', 'rs', 'RSA',
              'EC', 'oct', 'sig', 'enc', 'P-256', 'P-384', 'acme', 't1',
              'a1', ISS, AUD) + tuple(SCOPES):
        e += ['"%s"' % v]
    e += [str(NOW), str(NOW + 600), str(NOW - 31), '95617584000',
          '95617584001', '-1', '1e3', '0.5', '[]', '{}', 'null', 'true']
    return e


# ---- fuzz_module_helper_reply -------------------------------------------------

OPS_REPLY = ('health', 'sandbox.list', 'sandbox.create', 'sandbox.get',
             'sandbox.files.read', 'sandbox.exec')      # the harness's order
ERRORS = ('bad_frame', 'frame_too_large', 'bad_json', 'unknown_op',
          'unknown_field', 'missing_field', 'bad_type', 'bad_value',
          'bad_path', 'not_found', 'over_ceiling', 'capacity', 'busy',
          'not_a_file', 'not_a_directory', 'file_too_large', 'no_space',
          'io_error', 'exec_failed', 'termination_failed', 'not_permitted',
          'unavailable', 'profile_unavailable', 'internal', 'no_such_error')
SB = 'sb-0123456789abcdef01234567'
MAX_JSON = 64 * 1024
MAX_PAYLOAD = 64 * 1024 * 1024


def frame(j, payload=b'', jlen=None, plen=None, magic=b'VSB1'):
    if not isinstance(j, bytes):
        j = enc(j)
    return (magic + (len(j) if jlen is None else jlen).to_bytes(4, 'big')
            + (len(payload) if plen is None else plen).to_bytes(4, 'big')
            + j + payload)


def conn(op, chunk=7, again=False):
    """the harness's first byte: recv size 1 << chunk, NGX_AGAIN, op"""
    return bytes([(OPS_REPLY.index(op) << 4) | (8 if again else 0) | chunk])


def helper_reply_seeds():
    s = {}

    def r(name, op, stream, chunk=7, again=False):
        s['%s-%s' % (op.replace('sandbox.', '').replace('.', '-'), name)] = \
            conn(op, chunk, again) + stream

    sb = {'id': SB, 'state': 'running', 'profile': 'default',
          'epoch': 'e1', 'expires_at': 1800003600}
    r('ok', 'health', frame({'ok': True, 'version': 1, 'sandboxes': 2,
                             'egress': {'available': True,
                                        'state': 'running'}}))
    r('no-egress', 'health', frame({'ok': True, 'egress': 'x'}))
    r('ok', 'sandbox.list', frame({'ok': True, 'request_id': 'r1',
                                   'sandboxes': [sb, sb]}), 0, True)
    r('ok', 'sandbox.create', frame({'ok': True, 'sandbox': sb}), 3)
    r('bad-id', 'sandbox.create', frame({'ok': True,
                                         'sandbox': dict(sb, id='sb-XYZ')}))
    r('long-id', 'sandbox.create',
      frame({'ok': True, 'sandbox': dict(sb, id=SB + '0')}))
    r('upper-id', 'sandbox.create',
      frame({'ok': True, 'sandbox': dict(sb, id=SB.upper())}))
    r('no-sandbox', 'sandbox.create', frame({'ok': True}))
    r('ok', 'sandbox.get', frame({'ok': True, 'sandbox': sb}), 1, True)
    r('sandbox-list', 'sandbox.get', frame({'ok': True, 'sandbox': [sb]}))
    r('ok', 'sandbox.files.read',
      frame({'ok': True, 'size': 5, 'sha256': 'ab' * 32}, b'hello'), 2)
    r('short-sha', 'sandbox.files.read',
      frame({'ok': True, 'sha256': 'ab'}, b'\x00\xff'))
    r('empty', 'sandbox.files.read', frame({'ok': True}))
    r('ok', 'sandbox.exec',
      frame({'ok': True, 'exit_code': 0, 'stdout_len': 3, 'stderr_len': 2,
             'duration_ms': 5}, b'out\xffe'), 4)
    r('utf8', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 4, 'stderr_len': 0},
            '\u00e9\u00e9'.encode()))
    r('bad-utf8', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 1, 'stderr_len': 1}, b'\xc3\x28'))
    r('lengths-over', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 9, 'stderr_len': 0}, b'abc'))
    r('lengths-negative', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': -1, 'stderr_len': 4}, b'abc'))
    r('lengths-wrap', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 2 ** 63 - 1,
             'stderr_len': 2 ** 63 - 1}, b'abc'))
    r('lengths-strings', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': '3', 'stderr_len': None}, b'abc'))
    r('timed-out', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 0, 'stderr_len': 0,
             'timed_out': True, 'exit_code': None}))
    r('limits-hit', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 0, 'stderr_len': 0, 'exit_code': 0,
             'oom_killed': True, 'limits_hit': ['memory', 'pids']}))
    r('limits-hit-odd', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 0, 'stderr_len': 0,
             'limits_hit': [1, None, {'pids': True}, 'pids' * 64]}))
    r('limits-hit-not-array', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 0, 'stderr_len': 0,
             'limits_hit': 'pids'}))
    for i, e in enumerate(ERRORS):
        r('error-' + e, OPS_REPLY[i % len(OPS_REPLY)],
          frame({'ok': False, 'error': e, 'detail': 'why ' + e,
                 'field': 'argv', 'limit': 'memory_mb', 'step': 'spawn'}))
    r('error-nftables', 'sandbox.create',
      frame({'ok': False, 'error': 'unavailable',
             'detail': 'nftables does not work'}))
    r('profile-gone', 'sandbox.create',
      frame({'ok': False, 'error': 'profile_unavailable',
             'detail': 'image sha256:' + 'ab' * 32 + ' is not in '
                       '/var/lib/veto/images: veto-image import ...'}))
    r('profile-gone-short-digest', 'sandbox.create',
      frame({'ok': False, 'error': 'profile_unavailable',
             'detail': 'sha256:abc sha256:' + 'AB' * 32 + ' sha256:'}))
    r('profile-gone-no-detail', 'sandbox.create',
      frame({'ok': False, 'error': 'profile_unavailable', 'detail': 5}))
    r('error-number', 'sandbox.get', frame({'ok': False, 'error': 5,
                                            'detail': [], 'field': 1}))
    r('error-none', 'sandbox.list', frame({'ok': False}))
    r('ok-string', 'sandbox.list', frame({'ok': 'true'}))
    r('ok-missing', 'sandbox.list', frame({'sandboxes': []}))
    r('array', 'sandbox.list', frame(b'[{"ok":true}]'))
    r('not-json', 'sandbox.list', frame(b'{"ok":tru'))
    r('dup-ok', 'sandbox.list', frame(b'{"ok":false,"ok":true}'))
    r('nul', 'sandbox.list', frame(b'{"ok":true,"a":"\\u0000"}'))
    r('trailing', 'sandbox.list', frame(b'{"ok":true} {}'))
    r('bad-magic', 'sandbox.list', frame({'ok': True}, magic=b'VSB2'))
    r('json-zero', 'sandbox.list', frame(b'', jlen=0))
    r('json-max', 'sandbox.list', frame(b'{"ok":true,"p":"' + b'x' *
                                        (MAX_JSON - 16) + b'"}'), 7)
    r('json-over', 'sandbox.list', frame(b'{}', jlen=MAX_JSON + 1))
    r('payload-over', 'sandbox.files.read',
      frame({'ok': True}, plen=MAX_PAYLOAD + 1))
    r('payload-max-short', 'sandbox.files.read',
      frame({'ok': True}, plen=MAX_PAYLOAD))
    r('truncated-header', 'sandbox.list', frame({'ok': True})[:7])
    r('truncated-json', 'sandbox.list', frame({'ok': True})[:15], 0, True)
    r('truncated-payload', 'sandbox.exec',
      frame({'ok': True, 'stdout_len': 4, 'stderr_len': 0}, b'abcd')[:-2])
    r('closed', 'sandbox.get', b'')
    r('two-frames', 'sandbox.get',
      frame({'ok': True, 'sandbox': sb}) + frame({'ok': False}))
    return s


def helper_reply_dict():
    e = ['VSB1', '{"ok":true', '{"ok":false', '"error":', '"detail":',
         '"field":', '"limit":', '"step":', '"sandbox":', '"id":',
         '"stdout_len":', '"stderr_len":', '"sha256":', '"egress":',
         '"available":', '"state":', '"request_id":', '"%s"' % SB, 'sb-',
         'nftables', '\\u0000', '-1', '9223372036854775807']
    for n in (0, 1, 12, MAX_JSON, MAX_JSON + 1, MAX_PAYLOAD,
              MAX_PAYLOAD + 1, 0xffffffff):
        e.append(n.to_bytes(4, 'big'))
    e += ['"%s"' % x for x in ERRORS]
    return e


# ---- fuzz_module_mcp ----------------------------------------------------------

APR = 'apr_' + '0123456789abcdef' * 2
SESSION, OTHER_SESSION, VERSION, BAD_VERSION, SPLIT = 1, 2, 4, 8, 16
TOOLS = ('create_sandbox', 'list_sandboxes', 'get_sandbox', 'write_file',
         'read_file', 'exec', 'allow_hosts', 'destroy_sandbox',
         'approval_status', 'list_profiles', 'describe_isolation',
         'extend_sandbox', 'upload_archive', 'snapshot_sandbox',
         'list_snapshots', 'delete_snapshot', 'pause_sandbox',
         'resume_sandbox', 'sandbox_changes')
SNAP = 'snap-' + '0123456789abcdef01234567'


def rpc(method=None, params=None, id=1, **extra):
    m = {'jsonrpc': '2.0'}
    if id is not None:
        m['id'] = id
    if method is not None:
        m['method'] = method
    if params is not None:
        m['params'] = params
    m.update(extra)
    return enc(m)


def call(tool, args=None, id=1):
    p = {'name': tool}
    if args is not None:
        p['arguments'] = args
    return rpc('tools/call', p, id)


def mcp_seeds():
    s = {}

    def m(name, body, flags=SESSION):
        s[name] = bytes([flags]) + body

    init = {'protocolVersion': '2025-11-25', 'capabilities': {},
            'clientInfo': {'name': 'fuzz', 'version': '1'}}
    m('initialize', rpc('initialize', init), 0)
    m('initialize-old', rpc('initialize',
                            dict(init, protocolVersion='2025-06-18')), 0)
    m('initialize-unknown-version',
      rpc('initialize', dict(init, protocolVersion='1999-01-01')), SPLIT)
    m('initialize-no-caps', rpc('initialize', {'protocolVersion': 'x'}), 0)
    m('initialize-client-string',
      rpc('initialize', dict(init, clientInfo='x')), 0)
    m('initialize-notification', rpc('initialize', init, id=None), 0)
    m('initialize-with-session', rpc('initialize', init), SESSION)
    m('initialized', rpc('notifications/initialized', id=None))
    m('initialized-no-session', rpc('notifications/initialized', id=None),
      0)
    m('ping', rpc('ping', id='p-1'), SESSION | VERSION)
    m('ping-bad-version', rpc('ping'), SESSION | BAD_VERSION)
    m('ping-unknown-session', rpc('ping'), OTHER_SESSION)
    m('ping-no-session', rpc('ping'), 0)
    m('tools-list', rpc('tools/list', {}), SESSION | SPLIT)
    m('tools-list-cursor', rpc('tools/list', {'cursor': 'x'}))
    m('unknown-method', rpc('resources/list', {}))
    m('response', rpc(id=7, result={}))
    m('response-error', rpc(id=7, error={'code': 1, 'message': 'x'}))
    m('no-method', rpc(id=7))
    m('method-number', rpc(id=7, method=5))
    m('method-empty', rpc(''))
    m('method-long', rpc('m' * 129))
    m('params-array', rpc('ping', [1]))
    m('params-array-notification', rpc('ping', [1], id=None))
    m('params-string', rpc('ping', 'x'))
    m('id-null', b'{"jsonrpc":"2.0","id":null,"method":"ping"}')
    m('id-real', b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}')
    m('id-long', rpc('ping', id='i' * 257))
    m('id-max', rpc('ping', id='i' * 256))
    m('id-huge', b'{"jsonrpc":"2.0","id":99999999999999999999,"method":"x"}')
    m('jsonrpc-1', b'{"jsonrpc":"1.0","id":1,"method":"ping"}')
    m('no-jsonrpc', b'{"id":1,"method":"ping"}')
    m('batch', b'[' + rpc('ping') + b',' + rpc('ping', id=2) + b']')
    m('number', b'42')
    m('not-json', b'{"jsonrpc":')
    m('dup-key', b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}')
    m('nul', b'{"jsonrpc":"2.0","id":"\\u0000","method":"ping"}')
    m('empty', b'')
    m('too-large', rpc('ping', {'x': 'y' * (64 * 1024)}))
    m('call-no-name', rpc('tools/call', {}))
    m('call-args-array', rpc('tools/call', {'name': 'exec',
                                            'arguments': []}))
    m('call-unknown', call('rm_rf'))
    m('call-unknown-long', call('t' * 100))
    m('call-notification', rpc('tools/call', {'name': 'exec'}, id=None))

    m('create', call('create_sandbox', {
        'profile': 'default', 'limits': {'memory_mb': 128},
        'ttl_s': 600, 'network': {'allow': ['example.test']},
        'env': {'A': 'b'}, 'metadata': {'k': 'v'}}))
    m('create-none', call('create_sandbox'))
    m('create-unknown-arg', call('create_sandbox', {'rootfs': '/'}))
    m('create-unknown-arg-long', call('create_sandbox', {'x' * 80: 1}))
    m('create-approval', call('create_sandbox', {'approval_id': APR}))
    m('create-approval-number', call('create_sandbox', {'approval_id': 5}))
    m('list', call('list_sandboxes', {}))
    m('list-extra', call('list_sandboxes', {'sandbox_id': SB}))
    m('get', call('get_sandbox', {'sandbox_id': SB}))
    m('get-bad-id', call('get_sandbox', {'sandbox_id': 'sb-../x'}))
    m('get-no-id', call('get_sandbox', {}))
    m('get-id-number', call('get_sandbox', {'sandbox_id': 5}))
    m('destroy', call('destroy_sandbox', {'sandbox_id': SB,
                                          'approval_id': APR}))
    m('exec', call('exec', {'sandbox_id': SB, 'argv': ['sh', '-c', 'id'],
                            'cwd': 'src', 'env': {'X': '1'},
                            'stdin': 'in', 'timeout_s': 5}))
    m('exec-no-argv', call('exec', {'sandbox_id': SB}))
    m('read', call('read_file', {'sandbox_id': SB, 'path': 'src/a b.py'}))
    m('read-odd-path', call('read_file', {'sandbox_id': SB,
                                          'path': '../%2e/&path=x\u00e9'}))
    m('read-empty-path', call('read_file', {'sandbox_id': SB, 'path': ''}))
    m('read-no-path', call('read_file', {'sandbox_id': SB}))
    m('read-long-path', call('read_file', {'sandbox_id': SB,
                                           'path': 'p' * 4097}))
    m('write', call('write_file', {'sandbox_id': SB, 'path': 'a.txt',
                                   'content': 'hello\n'}))
    m('write-utf8', call('write_file', {'sandbox_id': SB, 'path': 'a',
                                        'content': 'x', 'encoding': 'utf-8'}))
    m('write-base64', call('write_file', {'sandbox_id': SB, 'path': 'a',
                                          'content': 'aGVsbG8=',
                                          'encoding': 'base64'}))
    m('write-base64-bad', call('write_file', {'sandbox_id': SB,
                                              'path': 'a', 'content': '@@',
                                              'encoding': 'base64'}))
    m('write-encoding-bad', call('write_file', {'sandbox_id': SB,
                                                'path': 'a', 'content': 'x',
                                                'encoding': 'latin1'}))
    m('write-empty', call('write_file', {'sandbox_id': SB, 'path': 'a',
                                         'content': ''}))
    m('write-no-content', call('write_file', {'sandbox_id': SB,
                                              'path': 'a'}))
    m('hosts', call('allow_hosts', {'sandbox_id': SB,
                                    'hosts': ['a.test', '*.b.test:443']}))
    m('hosts-missing', call('allow_hosts', {'sandbox_id': SB}))
    m('approval', call('approval_status', {'approval_id': APR}))
    m('approval-bad', call('approval_status', {'approval_id': 'apr_x'}))
    m('approval-missing', call('approval_status', {}))
    m('profiles', call('list_profiles', {}))
    m('profiles-arg', call('list_profiles', {'name': 'x'}))
    m('about', call('describe_isolation'))
    m('about-arg', call('describe_isolation', {'verbose': True}))
    m('extend', call('extend_sandbox', {'sandbox_id': SB, 'ttl_s': 1200}))
    m('extend-idle', call('extend_sandbox', {'sandbox_id': SB,
                                             'idle_s': 60}))
    m('extend-both', call('extend_sandbox', {'sandbox_id': SB, 'ttl_s': 600,
                                             'idle_s': 30,
                                             'approval_id': APR}))
    m('extend-none', call('extend_sandbox', {'sandbox_id': SB}))
    m('extend-bad', call('extend_sandbox', {'sandbox_id': SB,
                                            'ttl_s': 'long'}))
    m('extend-unknown', call('extend_sandbox', {'sandbox_id': SB,
                                                'ttl_s': 1, 'x': 1}))
    m('archive', call('upload_archive', {'sandbox_id': SB,
                                         'content': 'H4sIAAAAAAAAAwMAAAAAAAAAAAA=',
                                         'path': 'src', 'format': 'tar.gz'}))
    m('archive-b64-bad', call('upload_archive', {'sandbox_id': SB,
                                                 'content': 'AA='}))
    m('archive-format-bad', call('upload_archive', {'sandbox_id': SB,
                                                    'content': 'AAAA',
                                                    'format': 'zip'}))
    m('archive-path-bad', call('upload_archive', {'sandbox_id': SB,
                                                  'content': 'AAAA',
                                                  'path': '../x'}))
    m('archive-missing', call('upload_archive', {'sandbox_id': SB}))
    # the snapshots group's tools (_snapshots.c)
    m('snapshot', call('snapshot_sandbox', {'sandbox_id': SB, 'ttl_s': 60,
                                            'metadata': {'k': 'v'}}))
    m('snapshot-unknown', call('snapshot_sandbox', {'sandbox_id': SB,
                                                    'ttl': 60}))
    m('snapshots', call('list_snapshots', {}))
    m('snapshot-delete', call('delete_snapshot', {'snapshot_id': SNAP}))
    m('snapshot-delete-bad', call('delete_snapshot', {'snapshot_id': 'snap-1'}))
    m('pause', call('pause_sandbox', {'sandbox_id': SB}))
    m('resume', call('resume_sandbox', {'sandbox_id': SB}))
    m('changes', call('sandbox_changes', {'sandbox_id': SB}))
    m('changes-since', call('sandbox_changes', {'sandbox_id': SB,
                                                'since': SNAP,
                                                'format': 'diff'}))
    m('changes-bad', call('sandbox_changes', {'sandbox_id': SB,
                                              'since': '../x',
                                              'format': 'tar'}))
    m('fork', call('create_sandbox', {'from_snapshot': SNAP}))
    return s


def mcp_dict():
    e = ['"jsonrpc":"2.0"', '"id":', '"method":', '"params":', '"result":',
         '"error":', '"name":', '"arguments":', '"protocolVersion":',
         '"capabilities":', '"clientInfo":', '"cursor":', '"2025-11-25"',
         '"2025-06-18"', '"initialize"', '"notifications/initialized"',
         '"ping"', '"tools/list"', '"tools/call"', '"%s"' % SB,
         '"%s"' % APR, '"utf-8"', '"base64"', 'null', '[]', '{}',
         '99999999999999999999', '-1', '1.5']
    e += ['"%s"' % t for t in TOOLS]
    for a in ('sandbox_id', 'approval_id', 'profile', 'limits', 'ttl_s',
              'network', 'env', 'metadata', 'argv', 'cwd', 'stdin',
              'timeout_s', 'path', 'content', 'encoding', 'hosts',
              'snapshot_id', 'since', 'format', 'from_snapshot'):
        e.append('"%s":' % a)
    return e



# ---- fuzz_module_hash ----------------------------------------------------------

def hash_seeds():
    s = {}

    def q(name, query):
        s['query-' + name] = b'\x00' + query

    def p(name, path):
        s['path-' + name] = b'\x01' + path

    def b(name, split, body):
        s['body-' + name] = b'\x02' + bytes([split]) + body

    def r(name, shape, text):
        s['redact-' + name] = bytes([3 + 4 * shape]) + text

    q('path', b'path=src/main.py')
    q('path-encoded', b'path=a%2Fb%20c%25d')
    q('path-plus', b'path=a+b')
    q('path-lone-percent', b'path=100%')
    q('path-bad-hex', b'path=%zz')
    q('path-nul', b'path=a%00b')
    q('path-empty', b'path=')
    q('path-no-value', b'path')
    q('path-twice', b'path=a&path=b')
    q('path-case', b'PATH=a')
    q('name-encoded', b'%70ath=a')
    q('name-bad', b'pa%th=a')
    q('unknown', b'path=a&mode=x')
    q('empty-parts', b'&&path=a&&')
    q('only-amps', b'&&&')
    q('many', b'b=2&a=1&a=0&c&=x&d=')
    q('equals-in-value', b'path=a=b')
    q('utf8', 'path=\u00e9/\u2603'.encode())
    q('high-bytes', b'path=\xff\xfe')
    p('files', b'/v1/sandboxes/sb-0123456789abcdef01234567/files?path=a')
    p('root', b'/')
    p('empty', b'')
    p('odd', b'/v1/a b/%2F/\xff/..?x=%41&y')
    b('one', 0, b'{"argv":["true"]}')
    b('split', 3, b'0123456789' * 5)
    b('many', 15, b'abc')
    b('empty', 2, b'')
    r('plain', 0, b'nothing secret here')
    r('bearer', 1, b'curl -H "Authorization: Bearer abc.def"')
    r('json', 2, b'{"password": "hunter2", "user": "x"}')
    r('basic', 3, b'Basic dXNlcjpwYXNz,')
    r('quoted-open', 4, b'token="unclosed \\" ')
    r('jwt', 6, b'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig and eyJ.x')
    r('keys', 7, b'apikey=1&api_key=2&api-key=3 credential: x '
                 b'private_key=y session=z cookie=w passwd=v secret=u')
    r('escape', 2, b'"secret": "a\\"b" ')
    r('shell', 5, b'password=$(cat /run/pw) token=`id` cookie="a;b" x')
    return s


def hash_dict():
    return ['path=', '%', '%2F', '%00', '%zz', '%25', '&', '=', '+', '?',
            '/', '..', 'Bearer ', 'Basic ', 'eyJ', '.', 'password',
            'passwd', 'secret', 'token', 'apikey', 'api_key', 'api-key',
            'authorization', 'credential', 'private', 'access_key',
            'session', 'cookie', '": "', ': ', '=', '"', "'", '\\', ',',
            ';', '}', '\n', '\r', '\t']


TARGETS = {
    'fuzz_module_hash': (hash_seeds, hash_dict),
    'fuzz_module_jwt': (jwt_seeds, jwt_dict),
    'fuzz_module_helper_reply': (helper_reply_seeds, helper_reply_dict),
    'fuzz_module_mcp': (mcp_seeds, mcp_dict),
}

TITLES = {
    'fuzz_module_hash': 'queries, percent escapes, secret keys, schemes',
    'fuzz_module_jwt': 'Authorization headers, JOSE headers, claims, JWKS',
    'fuzz_module_helper_reply': 'frame bounds, reply fields, error names',
    'fuzz_module_mcp': 'JSON-RPC members, methods, tools, arguments',
}
