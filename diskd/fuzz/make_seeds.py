#!/usr/bin/env python3
"""Write the frame seeds of diskd/fuzz/corpus/frame: a few frames of each
kind a daemon receives, encoded by hand from proto/active_pg.proto (field
numbers) and proto/ap_types.h (enum values), so no protobuf library is
needed.  The page seeds (corpus/page) are pages of a real table; see README
in this directory."""
import os
import struct
import sys


def varint(v):
    out = b''
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def fint(f, v):
    return varint(f << 3) + varint(v & 0xffffffffffffffff)


def fbytes(f, b):
    return varint((f << 3) | 2) + varint(len(b)) + b


def packed(f, vals):
    return fbytes(f, b''.join(varint(v & 0xffffffffffffffff) for v in vals))


# proto/ap_types.h
INT4, INT8, TEXT = 3, 4, 11
OP_EQ, OP_LT = 1, 3
FN_ADD, FN_UPPER = 1, 18
CMP_INT, CMP_TEXT = 1, 8
AND, OR, NOT = 1, 2, 3
AGG_COUNT_STAR, AGG_SUM = 1, 3


def var(n):
    return fint(1, n)


def konst_int4(v):
    return fbytes(2, fint(2, INT4) + fbytes(3, struct.pack('<i', v)))


def konst_text(s):
    data = s.encode()
    return fbytes(2, fint(2, TEXT) + fbytes(3, bytes([((len(data) + 1) << 1) | 1]) + data))


def op(o, cmp, *args):
    return fbytes(3, fint(1, o) + fint(2, cmp) + b''.join(fbytes(3, a) for a in args))


def func(fn, result_kind, *args):
    return fbytes(7, fint(1, fn) + fint(2, result_kind) + fint(3, 0xffffffff) +
                  b''.join(fbytes(5, a) for a in args))


def boolexpr(kind, *args):
    return fbytes(4, fint(1, kind) + b''.join(fbytes(2, a) for a in args))


def scan(program):
    cols = b''.join(fbytes(7, fint(1, oid) + fint(3, attlen & 0xffffffff) + fint(4, ord(al)) +
                           (fint(5, 1) if byval else b'') + fint(8, kind))
                    for oid, attlen, al, byval, kind in
                    [(23, 4, 'i', True, INT4), (23, 4, 'i', True, INT4), (25, -1, 'i', False, TEXT)])
    snap = fbytes(8, fint(1, 990) + fint(2, 1010) + packed(3, [1000, 1002]))
    req = (fint(1, 42) + fbytes(2, fint(1, 1663) + fint(2, 5) + fint(3, 16384)) + fint(3, 100) +
           fint(4, 4) + fint(5, 32) + fint(6, 1) + cols + snap + fbytes(9, program) +
           fint(10, 262144))
    return fbytes(3, req)


def main(outdir):
    lt = op(OP_LT, CMP_INT, var(1), konst_int4(500))
    eq = op(OP_EQ, CMP_TEXT, var(3), konst_text('abc'))
    seeds = {
        'hello': fbytes(1, fint(1, 3) + fbytes(3, bytes(range(32)))),
        'cancel': fbytes(10, b''),
        'xid_reply': fbytes(6, packed(1, [1000, 1001]) + packed(2, [1, 2])),
        'scan_filter': scan(fbytes(1, lt) + packed(2, [1, 3])),
        'scan_and_or': scan(fbytes(1, boolexpr(OR, boolexpr(AND, lt, eq), boolexpr(NOT, eq))) +
                            packed(2, [2])),
        'scan_project_expr': scan(packed(2, [1]) +
                                  fbytes(3, func(FN_ADD, INT4, var(1), var(2))) +
                                  fbytes(3, func(FN_UPPER, TEXT, var(3)))),
        'scan_agg': scan(fbytes(1, lt) +
                         fbytes(4, fbytes(1, var(2)) + packed(2, [INT4]) +
                                fbytes(3, fint(1, AGG_COUNT_STAR)) +
                                fbytes(3, fint(1, AGG_SUM) + fint(2, INT4) + fbytes(3, var(1))) +
                                fint(4, 1 << 20))),
    }
    os.makedirs(outdir, exist_ok=True)
    for name, body in seeds.items():
        with open(os.path.join(outdir, name), 'wb') as f:
            f.write(body)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus', 'frame'))
