#!/usr/bin/env python3
"""Write the frame seeds of diskd/fuzz/corpus/frame: a few frames of each
kind a daemon receives, encoded by hand from proto/active_pg.proto (field
numbers) and proto/ap_types.h (enum values), so no protobuf library is
needed; and the row seeds of corpus/rows: batches of shipped rows laid out
as proto/ap_rows.h says, each after the column list fuzz_rows.c reads.  The
page seeds (corpus/page) are pages of a real table; see README in this
directory.

  make_seeds.py [FRAME_DIR [ROWS_DIR]]"""
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


# fuzz_rows.c's column list: length code, alignment code, by value
LENS = {-1: 0, -2: 1, 1: 2, 2: 3, 4: 4, 8: 5, 6: 6, 16: 7}
ALIGNS = {'c': 0, 's': 1, 'i': 2, 'd': 3}
ALIGN_BYTES = {'c': 1, 's': 2, 'i': 4, 'd': 8}


def align(n, a):
    return (n + a - 1) & ~(a - 1)


def varlena(payload, short):
    """A varlena as a heap tuple holds it: 1-byte header or 4-byte header."""
    if short:
        return bytes([((len(payload) + 1) << 1) | 1]) + payload
    return struct.pack('<I', (len(payload) + 4) << 2) + payload


def ondisk_toast(rawsize, extsize, valueid, toastrelid):
    """An external TOAST pointer to an on-disk value (VARTAG_ONDISK = 18)."""
    return bytes([0x01, 18]) + struct.pack('<iIII', rawsize, extsize, valueid, toastrelid)


def encode_row(cols, values, tid):
    """One row: header, [tid], [bitmap], data placed by heap_fill_tuple."""
    natts = len(cols)
    hasnulls = any(v is None for v in values)
    flags = (1 if hasnulls else 0) | (2 if tid is not None else 0)
    head = b''
    if tid is not None:
        head += struct.pack('<Q', tid)
    if hasnulls:
        bits = bytearray((natts + 7) // 8)
        for i, v in enumerate(values):
            if v is not None:
                bits[i >> 3] |= 1 << (i & 7)
        head += bytes(bits)
    dataoff = align(8 + len(head), 8)
    body = b''
    for (attlen, al, _), v in zip(cols, values):
        if v is None:
            continue
        pos = dataoff + len(body)
        # a varlena with a 1-byte header is not aligned (heap_fill_tuple)
        if not (attlen == -1 and v[0] & 1):
            body += bytes(align(pos, ALIGN_BYTES[al]) - pos)
        body += v
    row_bytes = dataoff + len(body)
    row = struct.pack('<IHH', row_bytes, flags, natts) + head
    return row + bytes(dataoff - 8 - len(head)) + body


def batch(cols, rows, with_tid):
    desc = bytes([len(cols) - 1, 1 if with_tid else 0])
    desc += bytes([LENS[l] | (ALIGNS[a] << 3) | (0x20 if bv else 0) for l, a, bv in cols])
    out = b''
    for n, values in enumerate(rows):
        out += bytes(align(len(out), 8) - len(out))
        out += encode_row(cols, values, ((n // 7) << 16 | (n % 7 + 1)) if with_tid else None)
    return desc + out


def rows_seeds():
    i4 = lambda v: struct.pack('<i', v)
    i8 = lambda v: struct.pack('<q', v)
    i2 = lambda v: struct.pack('<h', v)
    scan_cols = [(4, 'i', True), (-1, 'i', False), (8, 'd', True)]
    agg_cols = [(-1, 'i', False), (8, 'd', True), (-1, 'i', False), (16, 'c', False),
                (2, 's', True), (1, 'c', True), (-2, 'c', False), (6, 'i', False)]
    return {
        'scan_text': batch(scan_cols, [
            [i4(1), varlena(b'one', True), i8(10)],
            [i4(2), None, i8(20)],
            [i4(3), varlena(b'x' * 130, False), None],
            [None, varlena(b'', True), i8(-1)],
        ], True),
        'scan_toast': batch(scan_cols, [
            [i4(7), ondisk_toast(5000, 2000, 16400, 16390), i8(7)],
            [i4(8), varlena(b'abc', False), i8(8)],
        ], True),
        'agg_groups': batch(agg_cols, [
            [varlena(b'key', True), i8(3), varlena(b'\x00\x80' + b'\x01\x00' * 3, False),
             b'0123456789abcdef', i2(5), b'y', b'cstr\x00', b'mac6!!'],
            [None, i8(1), None, b'\xff' * 16, None, b'n', b'\x00', b'\x00' * 6],
        ], False),
    }


def main_rows(outdir):
    os.makedirs(outdir, exist_ok=True)
    for name, body in rows_seeds().items():
        with open(os.path.join(outdir, name), 'wb') as f:
            f.write(body)


if __name__ == '__main__':
    here = os.path.join(os.path.dirname(__file__), 'corpus')
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, 'frame'))
    main_rows(sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, 'rows'))
