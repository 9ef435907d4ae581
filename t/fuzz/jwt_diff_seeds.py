#!/usr/bin/env python3
"""Seeds of t/fuzz/fuzz_module_jwt_diff.c: tokens both verifiers accept
(HS256, RS256, ES256 under the harness's keys, with the claims its
module configuration takes), and a few each refuses, in
t/fuzz/corpus/fuzz_module_jwt_diff/.  Run it after changing the keys or
the claims the harness expects; it needs python3-cryptography.  The
private keys below sign test tokens only: the harness holds their
public halves.  RS256 and the deterministic ES256 (RFC 6979) make the
same bytes on every run.
"""

import base64
import hashlib
import hmac
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, utils

HS_SECRET = b'fuzz-diff-secret-0123456789abcdef0123'
RSA_KEY = b"""-----BEGIN PRIVATE KEY-----
MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC9RFUH5n9XpUHf
+nV3mpc66yNJLJXK+8gOLZ11pvVnjWe/FBZE94zsm5SZ/LeMp2N4f7cEn6TwVcaL
oryZ/3VezTuxq3l3o09leCbQSBQYaEIoiTJzGTE9KByNAZc2Au+L3/r6PUpGGRFp
FBXpPIhfB8PcMbuE9k5RHu3IQviU1TmCs3+R1OlFf8e7QOGrd62rn+0v8N/JbFuA
R+JkSLJVtFfqNy7t0T7T+vzIZevG57unhjGUIo0bStyCVH9GpWm9ho737daq+eD7
vBRbpaODg3cXLOw8TE0oCYQWvFlqjz0rYOt6GymKRISWF6k3CNl7/JdRYd9lMgSm
i57Vp/GNAgMBAAECggEADCnpL+EYiKJgACXBfE0GcIY7ItFHbgYaq3QzPSP2FdBV
luCsgh5jKebhbB7jQ81gMn09K5vM+f5kcuxXCnilOB4HITO5haUmJzz+rzHqsYGs
OtAY2qMHi8jy2/16ew5Bce/62i+rmqMZM0BT6V6Q2+nZixXBJo1XDclnxvaS5KtN
4qyBFy10jZ2sRmmIPURAXPlz0+CkdXsMp6HV94rgZ9KxfeM4IFBZDnDJSeoxo0Ih
4Bh/a0jvupqqbpQbsm8po69m6oBhsbcM4Xl+5aDw7afy+OTi4ZtueuQdUHRJOuI5
GdJxupQGP2ffTiJro86aj6KNX4c6/gGw+OfxEpOoWwKBgQDtXQDztlfEchcvc2do
xnJJrrv3ii0YezjmyeivBk5aiOOfZXa7hUoaEORx5FW3B/UKcxVxCj6YmbcO7Tml
sLH9vQbhzOEXgA/j0cgvYA4Yx5lv0/vy4Jq7BdCB9nQSeN3VS5KU66jB5A0QJWvJ
CTaG82qP1XtEWFdzK8zqWQM6bwKBgQDMIJewkdhFCoKiNPufGeHTh7F1Cnq01sw/
v+o5Iu7zKQfzaN16hIAhofEpNHVSo/akD/4BG0FIPyH+/niP8q+FFs8Bs3V4o3Zz
wCRWhlUhSvMTqkI+QkyEvIHlQ3SvH4e5QZMB6y6aX+SLQCF7FnYKs3yK/sdNeWbv
bwHnpogBwwKBgFgzxCPL8UdFYgo25wlPHK72qFBu3x0GxPk1tCo9vKX10iesC3fZ
KtUOy+TqhVNzOII+i4wq02HfVN/OFSrVwv5X3JPRjx8tbjoo/StllTduDD0615fE
EJtIqNdyXmVy1nPpFjoSa+5IsPX8AdZ9fu6cy09Rc/HMpgpdD1NR6lovAoGAW9SR
yTpja/PlfumNBS9Um5/g4oF7YF19d3Rz/45KpxOfYw6bDKINLpQ29M2HtkzTCU20
fHTxcnoMZjW+sSuBcMMpD1/XihUnlb0r280FATxBjGg88ttKpzBS03v8Q0hQ+7OX
WfaeeY6IN2j7Zu9c3UWP0sv5h04FU9PBrKALcZcCgYEAkbucMmEylx90lhdMIrYk
1J56uDprt3CbvQyn8QvaUWaW3QhrZ6ixcH/pzBeb+txiM8HOkEEIhrJZDCxg4n+f
OLiYFBPPRX+c7/gNaI4hO/2n7Gn8gq1yB6Ds6ytxaONIYS4A7/v0ZIHSoyBDcU9M
4nV2vptuuZRLHcESxXRTN6s=
-----END PRIVATE KEY-----
"""
EC_KEY = b"""-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgHUznbJ56gYxFbAye
ycKUrUt8+UIa+lkjcLW8GVbC4XqhRANCAARUajeUtUw0nC5N6fmZNjH3dvwpKQFf
wMTzNC41YVIo9wi0ndhcaCSVizE8tnY6vYHq92wQUTv9tvr6TVpnf1NG
-----END PRIVATE KEY-----
"""
NOW = 1800000000            # the harness's clock
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus',
                   'fuzz_module_jwt_diff')


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b'=')


def enc(obj):
    return json.dumps(obj, separators=(',', ':'), sort_keys=True).encode()


def claims(**kw):
    c = {'sub': 'a1', 'tenant': 'acme', 'iss': 'https://issuer.test',
         'aud': 'veto-sandbox', 'exp': NOW + 600, 'iat': NOW - 10,
         'jti': 'jti-1', 'scope': 'sandbox:create sandbox:exec'}
    c.update(kw)
    return enc(c)


def sign(alg, header, body):
    si = b64u(header) + b'.' + b64u(body)
    if alg == 'HS256':
        sig = hmac.new(HS_SECRET, si, hashlib.sha256).digest()
    elif alg == 'RS256':
        key = serialization.load_pem_private_key(RSA_KEY, None)
        sig = key.sign(si, padding.PKCS1v15(), hashes.SHA256())
    else:
        key = serialization.load_pem_private_key(EC_KEY, None)
        der = key.sign(si, ec.ECDSA(hashes.SHA256(),
                                    deterministic_signing=True))
        r, s = utils.decode_dss_signature(der)
        sig = r.to_bytes(32, 'big') + s.to_bytes(32, 'big')
    return si + b'.' + b64u(sig)


def seeds():
    kids = {'HS256': 'hs', 'RS256': 'rs', 'ES256': 'ec'}
    out = {}
    for alg, kid in kids.items():
        low = alg.lower()
        h = {'alg': alg, 'kid': kid, 'typ': 'JWT'}
        out['ok-' + low] = sign(alg, enc(h), claims())
        out['ok-' + low + '-notyp'] = sign(alg, enc({'alg': alg, 'kid': kid}),
                                           claims(sub='agent-2'))
        out['ok-' + low + '-aud-list'] = sign(alg, enc(h), claims(
            aud=['other', 'veto-sandbox'], nbf=NOW - 5))
        tok = out['ok-' + low]
        out['bad-' + low + '-sig'] = tok[:-3] + (b'AAA' if tok[-3:] != b'AAA'
                                                 else b'BBB')
    # the classic confusion: HS256 keyed with the RSA key's public PEM
    h = enc({'alg': 'HS256', 'kid': 'rs', 'typ': 'JWT'})
    si = b64u(h) + b'.' + b64u(claims())
    pub = serialization.load_pem_private_key(RSA_KEY, None).public_key()
    pem = pub.public_bytes(serialization.Encoding.PEM,
                           serialization.PublicFormat.SubjectPublicKeyInfo)
    out['bad-alg-confusion'] = si + b'.' + b64u(
        hmac.new(pem, si, hashlib.sha256).digest())
    out['bad-alg-none'] = (b64u(enc({'alg': 'none', 'kid': 'hs'})) + b'.'
                           + b64u(claims()) + b'.')
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(data)
    return 0


if __name__ == '__main__':
    sys.exit(main())
