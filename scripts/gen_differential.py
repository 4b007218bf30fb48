#!/usr/bin/env python3
"""Generator of the differential test of active_pg (t/010_differential.pl).

Writes a psql script that
  1. creates table dt holding every type the disks evaluate (bool, int2/4/8,
     float4/8, numeric unconstrained and numeric(15,2), date, timestamp,
     timestamptz, text, text COLLATE "C", varchar(n), char(n)), filled with
     NULLs, edge values (NaN, +-Infinity, min/max integers, numerics with
     large weights and scales, infinite and extreme dates and timestamps,
     empty, padded, multibyte, compressed and TOASTed strings) and random
     ordinary values;
  2. calls ap_diff(qno, query, param_types, param_values) once per generated
     query.  ap_diff (defined by the TAP test) runs the query with pushdown
     forced and with active_pg.enable = off and reports any difference in
     the result multisets or in the errors raised.

Queries mix comparisons of every type (also across types), integer, float
and numeric arithmetic (overflowing now and then), casts, date arithmetic,
EXTRACT/date_part/date_trunc, LIKE/ILIKE with escapes, IN/NOT IN lists with
NULLs, substring/length/upper/lower/||, BETWEEN [SYMMETRIC], CASE, COALESCE,
NULLIF, IS DISTINCT FROM, boolean tests, NULL tests and AND/OR/NOT nesting,
in WHERE and in the SELECT list; some are prepared statements with $n
parameters (generic and custom plans).

Then --agg-count more queries aggregate: count(*), count(x),
sum/avg over integers and numerics, min/max over integers, numeric(15,2),
dates, timestamps and text COLLATE "C", bool_and/bool_or, some with FILTER,
grouped by nothing, by columns or by expressions (or SELECT DISTINCT), with
WHERE clauses from the same generator and sometimes HAVING.  Only aggregates whose text form is
determined by the input multiset are generated: no float sums (their last
bits depend on the order of addition) and no min/max over floats or
unconstrained numerics (-0 vs 0 and 1.5 vs 1.50 are equal, so which one is
returned depends on the order); group keys likewise avoid those types.

The output depends only on --seed, --count, --agg-count and --rows (Python's
random.Random is stable across versions for the calls used here), so a
failure is reproduced by rerunning the generator with the seed the test
prints.  Python 3 standard library only.

  scripts/gen_differential.py --seed 1 --count 2000 --agg-count 1200 > diff.sql
  scripts/gen_differential.py --seed 1 --count 2000 --format list  # queries only
"""

import argparse
import random
import sys

from differential_table import COLS_BY_TYPE, Values, fmt_float, gen_setup, q


# --------------------------------------------------------------------------
# Expressions.  gen(ty, depth) returns SQL text of logical type ty.

INT_TYPES = ["int2", "int4", "int8"]
INT_RANK = {"int2": 0, "int4": 1, "int8": 2}
STR_TYPES = ["text", "textC", "varchar", "bpchar"]
PARAM_SQLTYPE = {
    "bool": "bool", "int2": "int2", "int4": "int4", "int8": "int8",
    "float4": "float4", "float8": "float8", "numeric": "numeric",
    "date": "date", "timestamp": "timestamp", "timestamptz": "timestamptz",
    "text": "text", "textC": "text", "varchar": "varchar", "bpchar": "bpchar",
}
DATE_FIELDS = ["year", "month", "day", "dow", "doy", "quarter", "week",
               "isodow", "decade", "century", "millennium", "julian", "epoch",
               "isoyear"]
TS_FIELDS = DATE_FIELDS + ["hour", "minute", "second", "milliseconds",
                           "microseconds"]
TRUNC_UNITS = ["year", "quarter", "month", "week", "day", "hour", "minute",
               "second", "millennium", "century", "decade", "milliseconds"]


def common_type(types):
    """The type PostgreSQL resolves a mix of these types to (one family)."""
    ts = set(types)
    if len(ts) == 1:
        return types[0]
    if ts <= set(INT_TYPES):
        return max(ts, key=lambda t: INT_RANK[t])
    if ts <= {"float4", "float8"} or "float8" in ts:
        return "float8"
    if "numeric" in ts:
        return "numeric"
    if "timestamptz" in ts:
        return "timestamptz"
    if "timestamp" in ts:
        return "timestamp"
    if ts <= {"text", "textC", "varchar"}:
        return "text"
    raise ValueError(types)


class QueryGen:
    def __init__(self, rng):
        self.rng = rng
        self.vals = Values(rng)
        self.params = None      # list of (sqltype, literal) when preparing
        self.used_col = False

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, weighted):
        tot = sum(w for _, w in weighted)
        x = self.rng.uniform(0, tot)
        for v, w in weighted:
            x -= w
            if x <= 0:
                return v
        return weighted[-1][0]

    # ---- leaves
    def column(self, ty):
        self.used_col = True
        return self.pick(COLS_BY_TYPE[ty])

    def with_col(self, f, *args):
        """f(*args), retried until it references a column of dt, so that
        clauses are not folded to constants by the planner."""
        for _ in range(6):
            self.used_col = False
            e = f(*args)
            if self.used_col:
                return e
        return e

    def const(self, ty):
        rng = self.rng
        if self.chance(0.04):
            return "NULL::" + PARAM_SQLTYPE[ty]
        if ty == "bool":
            return rng.choice(["true", "false"])
        if ty == "int2":
            return "'%s'::int2" % rng.choice(
                ["0", "1", "-1", "2", "7", "24", "100", "181", "32767",
                 "-32768", str(rng.randint(-200, 200))])
        if ty == "int4":
            v = rng.choice(["0", "1", "-1", "2", "3", "7", "10", "24", "100",
                            "1000", "46341", "100000", "2147483647",
                            str(rng.randint(-50000, 50000))])
            return v if not v.startswith("-") else "(%s)" % v
        if ty == "int8":
            return "'%s'::int8" % rng.choice(
                ["0", "1", "-1", "3", "1000", "3037000500", "9223372036854775807",
                 "-9223372036854775808", "10000000000",
                 str(rng.randint(-10**10, 10**10))])
        if ty == "float4":
            return "'%s'::float4" % rng.choice(
                ["NaN", "Infinity", "-Infinity", "0", "-0", "1.5", "0.1",
                 "3.4028235e38", "1e-45", "100", "-7.25",
                 fmt_float(round(rng.uniform(-1000, 1000), 2))])
        if ty == "float8":
            v = rng.choice(["NaN", "Infinity", "-Infinity", "0", "-0", "1.5",
                            "0.1", "1e308", "5e-324", "100", "-7.25", "2",
                            "1e-300", fmt_float(rng.uniform(-1e6, 1e6)),
                            fmt_float(round(rng.uniform(-1000, 1000), 2))])
            return "'%s'::float8" % v
        if ty == "numeric":
            v = rng.choice(["0", "1", "1.50", "1.5", "0.06", "0.05", "0.07",
                            "24", "-2.5", "100.00", "0.0001", "1e100",
                            "1e-20", "'NaN'", "'Infinity'", "'-Infinity'",
                            "123456789012345678901234567890.123456789",
                            "%d.%02d" % (rng.randint(-999, 999), rng.randint(0, 99))])
            if v.startswith("'"):
                return v + "::numeric"
            if v.startswith("-") or "e" in v:
                return "(%s::numeric)" % v
            return v if self.chance(0.7) else v + "::numeric"
        if ty == "date":
            return "date '%s'" % rng.choice(
                ["1994-01-01", "1995-03-15", "1996-02-29", "1998-12-01",
                 "1992-01-01", "infinity", "-infinity", "2000-01-01",
                 "4713-01-01 BC", "5874897-12-31",
                 "%04d-%02d-%02d" % (rng.randint(1992, 1998),
                                     rng.randint(1, 12), rng.randint(1, 28))])
        if ty == "timestamp":
            return "timestamp '%s'" % rng.choice(
                ["1994-01-01 00:00:00", "1995-06-30 12:00:00", "infinity",
                 "-infinity", "1993-12-31 23:59:59.999999", "2000-02-29",
                 "1996-07-04 11:22:33.5", "294276-12-31 23:59:59"])
        if ty == "timestamptz":
            return "timestamptz '%s'" % rng.choice(
                ["1994-01-01 00:00:00+00", "1995-06-30 12:00:00-07",
                 "infinity", "-infinity", "1996-01-01 00:00:00+05:30",
                 "1994-01-01 00:00:00"])
        if ty in ("text", "textC"):
            s = q(self.vals.random_string(12))
            return s if self.chance(0.7) else s + "::text"
        if ty == "varchar":
            return q(self.vals.random_string(10)) + "::varchar"
        if ty == "bpchar":
            return q(self.vals.random_string(6)) + rng.choice(
                ["::bpchar", "::char(6)", "::char(3)"])
        raise ValueError(ty)

    def param(self, ty):
        lit = self.const(ty)
        if self.chance(0.1):
            lit = "NULL"
        self.params.append((PARAM_SQLTYPE[ty], lit))
        return "$%d" % len(self.params)

    INITPLANS = {
        "int4": ["(SELECT max(j4) FROM dt WHERE j4 < 100)", "(SELECT count(*)::int4 FROM dt)"],
        "int8": ["(SELECT sum(k2) FROM dt)"],
        "numeric": ["(SELECT avg(m) FROM dt)", "(SELECT max(n2) FROM dt WHERE n2 < 1000)"],
        "date": ["(SELECT min(d2) + 100 FROM dt)"],
        "bpchar": ["(SELECT max(c) FROM dt WHERE c < 'b')"],
        "textC": ["(SELECT min(tc) FROM dt WHERE tc > 'k')"],
    }

    def leaf(self, ty):
        if self.params is not None and self.chance(0.3) and len(self.params) < 6:
            return self.param(ty)
        if ty in self.INITPLANS and self.chance(0.02):
            # an init-plan: evaluated once on the host, shipped as a value
            return self.rng.choice(self.INITPLANS[ty])
        if self.chance(0.72):
            return self.column(ty)
        return self.const(ty)

    # ---- typed producers
    def gen(self, ty, depth):
        if depth <= 0 or self.chance(0.3):
            return self.leaf(ty)
        f = getattr(self, "gen_" + ty)
        return f(depth)

    def generic(self, ty, depth):
        """CASE / COALESCE / NULLIF, valid for any type."""
        rng = self.rng
        k = rng.random()
        if k < 0.4:
            parts = ["CASE"]
            for _ in range(rng.randint(1, 2)):
                parts.append("WHEN %s THEN %s" % (self.gen_bool(depth - 1),
                                                   self.gen(ty, depth - 1)))
            if self.chance(0.7):
                parts.append("ELSE %s" % self.gen(ty, depth - 1))
            parts.append("END")
            return "(" + " ".join(parts) + ")"
        if k < 0.55:
            # simple CASE
            sty = rng.choice(["int4", "text", "bpchar", "date", "numeric"])
            x = self.gen(sty, depth - 1)
            parts = ["CASE", x]
            for _ in range(rng.randint(1, 3)):
                parts.append("WHEN %s THEN %s" % (self.const(sty),
                                                   self.gen(ty, depth - 1)))
            if self.chance(0.5):
                parts.append("ELSE %s" % self.gen(ty, depth - 1))
            parts.append("END")
            return "(" + " ".join(parts) + ")"
        if k < 0.85:
            args = [self.gen(ty, depth - 1) for _ in range(rng.randint(2, 3))]
            return "COALESCE(%s)" % ", ".join(args)
        return "NULLIF(%s, %s)" % (self.gen(ty, depth - 1), self.gen(ty, depth - 1))

    def int_operands(self, ty, depth):
        """Two integer operands whose wider type is ty."""
        rng = self.rng
        r = INT_RANK[ty]
        a = rng.choice([t for t in INT_TYPES if INT_RANK[t] <= r])
        b = ty if INT_RANK[a] < r or self.chance(0.5) else \
            rng.choice([t for t in INT_TYPES if INT_RANK[t] <= r])
        if self.chance(0.5):
            a, b = b, a
        return self.gen(a, depth - 1), self.gen(b, depth - 1)

    def divisor(self, ty, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.5:
            return self.const_nonzero(ty)
        if k < 0.75:
            return "NULLIF(%s, %s)" % (self.gen(ty, depth - 1),
                                       "0" if ty != "int2" else "'0'::int2")
        return self.gen(ty, depth - 1)

    def const_nonzero(self, ty):
        rng = self.rng
        if ty == "int2":
            return "'%d'::int2" % rng.choice([1, 2, 3, 7, -1, -3, 100])
        if ty == "int4":
            return rng.choice(["1", "2", "3", "7", "(-1)", "(-3)", "100", "1000"])
        if ty == "int8":
            return "'%d'::int8" % rng.choice([1, 2, 3, 7, -1, 1000, 10**10])
        if ty in ("float4", "float8"):
            return "'%s'::%s" % (rng.choice(["1.5", "3", "-0.5", "1e-300",
                                             "Infinity", "NaN", "7"]), ty)
        return rng.choice(["1.5", "3", "(-0.5)", "7", "0.0001", "1e-20",
                           "'NaN'::numeric", "'Infinity'::numeric"])

    def gen_int2(self, depth):
        return self.gen_int("int2", depth)

    def gen_int4(self, depth):
        return self.gen_int("int4", depth)

    def gen_int8(self, depth):
        return self.gen_int("int8", depth)

    def gen_int(self, ty, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.45:
            a, b = self.int_operands(ty, depth)
            op = rng.choice(["+", "-", "*", "+", "-", "*", "/", "%"])
            if op in ("/", "%"):
                b = self.divisor(rng.choice([t for t in INT_TYPES
                                             if INT_RANK[t] <= INT_RANK[ty]]), depth)
            return "(%s %s %s)" % (a, op, b)
        if k < 0.5:
            return "(- %s)" % self.gen(ty, depth - 1)
        if k < 0.65:
            src = rng.choice(["int2", "int4", "int8", "numeric", "float8",
                              "float4"])
            return "(%s)::%s" % (self.gen(src, depth - 1), ty)
        if k < 0.72 and ty != "int2":
            d = "(%s - %s)" % (self.gen("date", depth - 1),
                               self.gen("date", depth - 1))
            return d if ty == "int4" else d + "::int8"
        if k < 0.8 and ty != "int2":
            f = rng.choice(["length", "char_length", "octet_length"])
            s = self.gen(rng.choice(STR_TYPES), depth - 1)
            return "%s(%s)" % (f, s) if ty == "int4" else "%s(%s)::int8" % (f, s)
        if k < 0.83:
            return "abs(%s)" % self.gen(ty, depth - 1)
        return self.generic(ty, depth)

    def gen_float4(self, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.45:
            op = rng.choice(["+", "-", "*", "/"])
            a = self.gen("float4", depth - 1)
            b = self.divisor("float4", depth) if op == "/" else self.gen("float4", depth - 1)
            return "(%s %s %s)" % (a, op, b)
        if k < 0.65:
            src = rng.choice(["int2", "int4", "float8", "numeric"])
            return "(%s)::float4" % self.gen(src, depth - 1)
        if k < 0.7:
            return "(- %s)" % self.gen("float4", depth - 1)
        return self.generic("float4", depth)

    def gen_float8(self, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.4:
            op = rng.choice(["+", "-", "*", "/"])
            a = self.gen(rng.choice(["float8", "float8", "float4"]), depth - 1)
            if op == "/":
                b = self.divisor("float8", depth)
            else:
                b = self.gen(rng.choice(["float8", "float8", "float4"]), depth - 1)
            if self.chance(0.5):
                a, b = (b, a) if op != "/" else (a, b)
            return "(%s %s %s)" % (a, op, b)
        if k < 0.55:
            src = rng.choice(["int2", "int4", "int8", "numeric", "float4"])
            return "(%s)::float8" % self.gen(src, depth - 1)
        if k < 0.68:
            if self.chance(0.6):
                return "date_part(%s, %s)" % (q(rng.choice(DATE_FIELDS)),
                                              self.gen("date", depth - 1))
            src = rng.choice(["timestamp", "timestamp", "timestamptz"])
            return "date_part(%s, %s)" % (q(rng.choice(TS_FIELDS)),
                                          self.gen(src, depth - 1))
        if k < 0.72:
            return "(- %s)" % self.gen("float8", depth - 1)
        return self.generic("float8", depth)

    def gen_numeric(self, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.45:
            op = rng.choice(["+", "-", "*", "+", "-", "*", "/", "%"])
            a = self.gen(rng.choice(["numeric"] * 3 + INT_TYPES), depth - 1)
            if op in ("/", "%"):
                b = self.divisor("numeric", depth)
            else:
                b = self.gen(rng.choice(["numeric"] * 3 + INT_TYPES), depth - 1)
                if "numeric" not in (a, b) and self.chance(0.5):
                    b = self.gen("numeric", depth - 1)
            return "(%s %s %s)" % (a, op, b)
        if k < 0.55:
            return "(%s)::numeric" % self.gen(rng.choice(INT_TYPES), depth - 1)
        if k < 0.63:
            return "(%s)::numeric(%s)" % (self.gen("numeric", depth - 1),
                                          rng.choice(["10,2", "15,2", "5,0", "8,4",
                                                      "3,1", "20,10"]))
        if k < 0.73:
            if self.chance(0.6):
                return "extract(%s FROM %s)" % (rng.choice(DATE_FIELDS),
                                                self.gen("date", depth - 1))
            src = rng.choice(["timestamp", "timestamp", "timestamptz"])
            return "extract(%s FROM %s)" % (rng.choice(TS_FIELDS),
                                            self.gen(src, depth - 1))
        if k < 0.76:
            return "(%s)::numeric" % self.gen(rng.choice(["float4", "float8"]), depth - 1)
        if k < 0.8:
            return "(- %s)" % self.gen("numeric", depth - 1)
        return self.generic("numeric", depth)

    def gen_date(self, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.5:
            i = self.gen(rng.choice(["int4", "int4", "int2"]), depth - 1) \
                if self.chance(0.4) else rng.choice(["1", "30", "90", "365", "(-7)", "0"])
            if self.chance(0.15):
                return "(%s + %s)" % (i, self.gen("date", depth - 1))
            return "(%s %s %s)" % (self.gen("date", depth - 1), rng.choice(["+", "-"]), i)
        if k < 0.6:
            return "(%s)::date" % self.gen("timestamp", depth - 1)
        return self.generic("date", depth)

    def gen_timestamp(self, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.3:
            return "(%s)::timestamp" % self.gen("date", depth - 1)
        if k < 0.55:
            arg = self.gen("timestamp", depth - 1) if self.chance(0.6) else \
                "(%s)::timestamp" % self.gen("date", depth - 1)
            return "date_trunc(%s, %s)" % (q(rng.choice(TRUNC_UNITS)), arg)
        if k < 0.65:
            return "(%s + interval %s)" % (self.gen(rng.choice(["date", "timestamp"]), depth - 1),
                                           rng.choice(["'1 day'", "'1' year", "'3' month",
                                                       "'-90' day", "'1 hour'"]))
        return self.generic("timestamp", depth)

    def gen_timestamptz(self, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.2:
            return "(%s)::timestamptz" % self.gen("date", depth - 1)
        if k < 0.35:
            return "date_trunc(%s, %s)" % (q(rng.choice(TRUNC_UNITS)),
                                           self.gen("timestamptz", depth - 1))
        return self.generic("timestamptz", depth)

    def gen_strfunc(self, ty, depth):
        rng = self.rng
        k = rng.random()
        src = ty if ty != "text" else rng.choice(["text", "text", "varchar", "bpchar"])
        if k < 0.4:
            s = self.gen(src, depth - 1)
            a = rng.choice(["1", "2", "0", "(-1)", "3", "5"]) if self.chance(0.8) \
                else self.gen("int4", depth - 1)
            if self.chance(0.7):
                b = rng.choice(["1", "2", "3", "0", "10"]) if self.chance(0.85) \
                    else self.gen("int4", depth - 1)
                e = "substring(%s FROM %s FOR %s)" % (s, a, b)
            else:
                e = "substring(%s FROM %s)" % (s, a)
            return e
        if k < 0.6 and ty in ("textC",):
            return "%s(%s)" % (rng.choice(["upper", "lower"]), self.gen("textC", depth - 1))
        if k < 0.65 and ty == "text":
            return "%s(%s)" % (rng.choice(["upper", "lower"]), self.gen("text", depth - 1))
        if k < 0.85:
            a = self.gen(src, depth - 1)
            b = self.gen(rng.choice(STR_TYPES if ty != "textC" else ["textC", "text"]),
                         depth - 1)
            return "(%s || %s)" % (a, b)
        return None

    def gen_text(self, depth):
        rng = self.rng
        e = self.gen_strfunc("text", depth)
        if e:
            return e
        k = rng.random()
        if k < 0.3:
            return "(%s)::text" % self.gen(rng.choice(["bpchar", "varchar"]), depth - 1)
        if k < 0.4:
            return "(%s)::text" % self.gen(rng.choice(["int4", "numeric", "date"]), depth - 1)
        return self.generic("text", depth)

    def gen_textC(self, depth):
        e = self.gen_strfunc("textC", depth)
        if e:
            return e
        return self.generic("textC", depth)

    def gen_varchar(self, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.4:
            return "(%s)::varchar(%d)" % (self.gen(rng.choice(["text", "varchar"]), depth - 1),
                                          rng.randint(1, 6))
        return self.generic("varchar", depth)

    def gen_bpchar(self, depth):
        rng = self.rng
        k = rng.random()
        if k < 0.4:
            return "(%s)::char(%d)" % (self.gen(rng.choice(["text", "varchar", "bpchar"]),
                                                depth - 1), rng.randint(1, 8))
        return self.generic("bpchar", depth)

    # ---- booleans
    COMPARE_FAMILIES = [
        (["int2", "int4", "int8"], 6),
        (["float4", "float8"], 4),
        (["numeric"], 4),
        (["numeric", "int2", "int4", "int8"], 2),
        (["float8", "int4", "int8", "numeric"], 1),
        (["date"], 4),
        (["date", "timestamp"], 2),
        (["timestamp"], 2),
        (["timestamptz"], 1),
        (["date", "timestamptz"], 1),
        (["timestamp", "timestamptz"], 1),
        (["textC"], 3),
        (["text", "textC", "varchar"], 2),
        (["text", "varchar"], 2),
        (["bpchar"], 3),
        (["bool"], 1),
    ]

    def comparable_pair(self, depth):
        rng = self.rng
        fam = self.pick(self.COMPARE_FAMILIES)
        a = rng.choice(fam)
        b = rng.choice(fam)
        # the left side usually has a column
        ea = self.with_col(self.gen, a, depth - 1) if self.chance(0.6) else self.column(a)
        eb = self.gen(b, depth - 1) if self.chance(0.4) else self.leaf(b)
        if b == "date" and self.chance(0.1):
            # a stable function, evaluated at execution start (not projected:
            # the two runs are different statements)
            eb = self.rng.choice(["current_date", "(current_date - 10000)",
                                  "(current_date + j4)"])
        return fam, ea, eb

    def bpchar_text(self, depth):
        """bpchar against text: via either cast."""
        c = self.gen("bpchar", depth - 1)
        t = self.gen(self.rng.choice(["text", "varchar", "textC"]), depth - 1)
        if self.chance(0.5):
            return "(%s)::text" % c, t
        return c, "(%s)::bpchar" % t

    def like_pattern(self):
        rng = self.rng
        base = rng.choice(["abc", "a", "ab", "é", "日本", "row 1", "ROW", "x",
                           "A", "hello", "k", "", "Ü", "alpha", "be", "c"])
        pats = ["%s%%" % base, "%%%s" % base, "%%%s%%" % base, base,
                "_%s" % base, "%s_" % base, "%s%%_" % base, "%", "_", "",
                "%_%", "__", "% %", "a\\%", "%\\_%", "%\\\\%",
                "%s\\%%%%" % base, "%%%s%% " % base, "_ _"]
        return rng.choice(pats)

    def gen_bool(self, depth):
        rng = self.rng
        if depth <= 0 or self.chance(0.08):
            if self.params is not None and self.chance(0.2):
                return self.param("bool")
            return self.column("bool") if self.chance(0.9) else self.const("bool")
        k = rng.random()
        if k < 0.3:
            fam, a, b = self.comparable_pair(depth)
            if self.chance(0.1):
                a, b = self.bpchar_text(depth)
            op = rng.choice(["=", "<>", "<", "<=", ">", ">=", "=", "<>"])
            return "(%s %s %s)" % (a, op, b)
        if k < 0.36:
            fam, a, b = self.comparable_pair(depth)
            return "(%s IS %sDISTINCT FROM %s)" % (a, rng.choice(["", "NOT "]), b)
        if k < 0.43:
            fam = self.pick(self.COMPARE_FAMILIES)
            ty = rng.choice(fam)
            x = self.with_col(self.gen, ty, depth - 1)
            lo = self.leaf(rng.choice(fam)) if self.chance(0.8) else self.gen(rng.choice(fam), depth - 1)
            hi = self.leaf(rng.choice(fam))
            return "(%s %sBETWEEN %s%s AND %s)" % (
                x, rng.choice(["", "", "NOT "]),
                rng.choice(["", "", "SYMMETRIC "]), lo, hi)
        if k < 0.52:
            ty = rng.choice(STR_TYPES)
            s = self.with_col(self.gen, ty, depth - 1) if self.chance(0.5) else self.column(ty)
            op = rng.choice(["LIKE", "LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"])
            pat = self.like_pattern()
            if self.chance(0.15):
                pat = pat.replace("\\", "#")
                return "(%s %s %s ESCAPE '#')" % (s, op, q(pat))
            if self.params is not None and self.chance(0.2):
                self.params.append(("text", q(pat)))
                return "(%s %s $%d)" % (s, op, len(self.params))
            return "(%s %s %s)" % (s, op, q(pat))
        if k < 0.62:
            fam = self.pick(self.COMPARE_FAMILIES)
            ty = fam[0]
            x = self.with_col(self.gen, ty, depth - 1) if self.chance(0.4) else self.column(ty)
            n = rng.randint(1, 6)
            items = []
            used = [ty]
            for _ in range(n):
                ity = rng.choice(fam)
                used.append(ity)
                items.append("NULL" if self.chance(0.12) else self.const(ity))
            if self.chance(0.15):
                items[-1] = self.gen(ty, depth - 1)
            form = rng.random()
            if form < 0.7:
                return "(%s %sIN (%s))" % (x, rng.choice(["", "NOT "]), ", ".join(items))
            op = rng.choice(["=", "<>", "<", ">="])
            return "(%s %s %s(ARRAY[%s]::%s[]))" % (
                x, op, rng.choice(["ANY", "ALL"]), ", ".join(items),
                PARAM_SQLTYPE[common_type(used)])
        if k < 0.68:
            ty = rng.choice(list(COLS_BY_TYPE))
            return "(%s IS %sNULL)" % (self.with_col(self.gen, ty, depth - 1),
                                       rng.choice(["", "NOT "]))
        if k < 0.74:
            return "(%s IS %s%s)" % (self.gen_bool(depth - 1), rng.choice(["", "NOT "]),
                                     rng.choice(["TRUE", "FALSE", "UNKNOWN"]))
        if k < 0.84:
            n = rng.randint(2, 3)
            op = rng.choice([" AND ", " OR "])
            return "(" + op.join(self.gen_bool(depth - 1) for _ in range(n)) + ")"
        if k < 0.9:
            return "(NOT %s)" % self.gen_bool(depth - 1)
        if k < 0.93:
            return self.column("bool")
        return self.generic("bool", depth)

    # ---- queries
    def select_item(self, depth):
        ty = self.pick([("int2", 1), ("int4", 3), ("int8", 2), ("float4", 1),
                        ("float8", 2), ("numeric", 4), ("date", 2),
                        ("timestamp", 1), ("timestamptz", 1), ("text", 2),
                        ("textC", 2), ("varchar", 1), ("bpchar", 2), ("bool", 2)])
        if ty == "bool":
            return self.gen_bool(depth)
        return self.gen(ty, depth) if self.chance(0.85) else getattr(self, "gen_" + ty)(depth)

    def query(self, prepared):
        rng = self.rng
        self.params = [] if prepared else None
        depth = rng.choice([1, 2, 2, 3, 3])
        form = rng.random()
        items = []
        if form < 0.25:
            items = ["id"]
        elif form < 0.3:
            items = ["*"]
        else:
            if self.chance(0.6):
                items.append("id")
            for k in range(rng.randint(1, 3)):
                items.append("%s AS e%d" % (self.select_item(depth), k + 1))
        nconj = rng.choice([0, 1, 1, 1, 2, 2, 3, 4])
        if form < 0.3 and nconj == 0:
            nconj = 1
        conj = [self.with_col(self.gen_bool, depth) for _ in range(nconj)]
        return self.where(sql_select(items), conj, prepared)

    def where(self, sql, conj, prepared):
        """sql with the WHERE clause of conj, and the query's parameters: a
        prepared query gets one somewhere."""
        if conj:
            sql += " WHERE " + " AND ".join(conj)
        params = self.params
        self.params = None
        if prepared and not params:
            params = [("int4", str(self.rng.randint(-100, 100)))]
            sql += (" AND " if conj else " WHERE ") + "j4 > $1"
        return sql, params


def sql_select(items):
    """SELECT of items from the test table."""
    return "SELECT %s FROM dt" % ", ".join(items)


# Aggregates whose result text is a function of the input multiset (see the
# module docstring): (aggregate, logical types of its argument).
AGGREGATES = [
    ("count", ["int2", "int4", "int8", "numeric", "date", "text", "bool", "float8"]),
    ("sum", ["int2", "int4", "int8", "numeric"]),
    ("avg", ["int2", "int4", "int8", "numeric"]),
    ("min", ["int2", "int4", "int8", "n2", "date", "timestamp", "timestamptz", "textC"]),
    ("max", ["int2", "int4", "int8", "n2", "date", "timestamp", "timestamptz", "textC"]),
    ("bool_and", ["bool"]),
    ("bool_or", ["bool"]),
]

# GROUP BY items whose equal values print alike.
GROUP_KEYS = ["b", "k2", "j4 % 7", "id % 13", "j8 % 5", "d2", "tc", "t", "v", "c",
              "n2", "extract(year FROM d2)", "date_trunc('month', ts)", "k2 / 10",
              "substr(tc, 1, 2)", "i4 % 3", "d2 - date '1995-01-01' > 300",
              "coalesce(k2, -1)"]


class AggQueryGen(QueryGen):
    """Aggregating queries over dt, from the same expression
    generators as the row queries."""

    def agg_arg(self, ty, depth):
        if ty == "n2":
            return "n2" if self.chance(0.7) else "round(m, 2)"
        if ty == "bool":
            return self.with_col(self.gen_bool, depth)
        if ty == "float8" or self.chance(0.5):
            return self.column(ty)
        return self.with_col(self.gen, ty, depth)

    def aggregate(self, depth):
        name, types = self.rng.choice(AGGREGATES)
        if name == "count" and self.chance(0.35):
            item = "count(*)"
        else:
            item = "%s(%s)" % (name, self.agg_arg(self.rng.choice(types), depth))
        if self.chance(0.15):
            item += " FILTER (WHERE %s)" % self.with_col(self.gen_bool, 1)
        return item

    def agg_query(self, prepared):
        rng = self.rng
        self.params = [] if prepared else None
        depth = rng.choice([1, 1, 2])
        nkeys = rng.choice([0, 0, 1, 1, 1, 2, 2, 3])
        keys = rng.sample(GROUP_KEYS, nkeys)
        aggs = [self.aggregate(depth) for _ in range(rng.randint(1 if nkeys == 0 else 0, 4))]
        # named columns: the checker stores results in a table
        items = (["%s AS k%d" % (k, i + 1) for i, k in enumerate(keys)]
                 + ["%s AS a%d" % (a, i + 1) for i, a in enumerate(aggs)])
        if not items:
            items = ["count(*)"]
        nconj = rng.choice([0, 0, 1, 1, 2])
        conj = [self.with_col(self.gen_bool, 1) for _ in range(nconj)]
        sql, params = self.where(sql_select(items), conj, prepared)
        if keys and not aggs and self.chance(0.4):
            # duplicate elimination: SELECT DISTINCT instead of GROUP BY
            sql = "SELECT DISTINCT" + sql[len("SELECT"):]
        elif keys:
            sql += " GROUP BY " + ", ".join(keys)
            if self.chance(0.2):
                sql += " HAVING count(*) > %d" % rng.randint(0, 3)
        return sql, params


def emit(out, qno, sql, params, rng):
    """One ap_diff call (or, for --format list, the query)."""
    if params:
        mode = "generic" if rng.random() < 0.65 else "custom"
        ptypes = ", ".join(p[0] for p in params)
        pvals = ", ".join(("%s::%s" % (p[1], p[0])) if p[1] == "NULL" else p[1]
                          for p in params)
        out.append("SELECT ap_diff(%d, $Q$%s$Q$, %s, $Q$%s$Q$, %s);"
                   % (qno, sql, q(ptypes), pvals, q(mode)))
    else:
        out.append("SELECT ap_diff(%d, $Q$%s$Q$);" % (qno, sql))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--agg-count", type=int, default=0,
                    help="aggregating queries after the --count row queries")
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--format", choices=["psql", "list"], default="psql")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    out = []
    out.append("-- generated by scripts/gen_differential.py --seed %d --count %d --agg-count %d --rows %d"
               % (args.seed, args.count, args.agg_count, args.rows))
    gen_setup(random.Random(args.seed * 7919 + 1), args.rows, out)
    qg = QueryGen(rng)
    for qno in range(1, args.count + 1):
        prepared = rng.random() < 0.15
        sql, params = qg.query(prepared)
        assert "$Q$" not in sql and "\n" not in sql
        if args.format == "list":
            if params:
                sql += "  -- params: %s" % ", ".join("%s %s" % p for p in params)
            out.append(sql)
            continue
        emit(out, qno, sql, params, rng)
    # the aggregating queries draw from their own stream, so that adding
    # them leaves the row queries of a seed unchanged
    arng = random.Random(args.seed * 104729 + 4)
    ag = AggQueryGen(arng)
    for qno in range(args.count + 1, args.count + args.agg_count + 1):
        sql, params = ag.agg_query(arng.random() < 0.15)
        assert "$Q$" not in sql and "\n" not in sql
        if args.format == "list":
            if params:
                sql += "  -- params: %s" % ", ".join("%s %s" % p for p in params)
            out.append(sql)
            continue
        emit(out, qno, sql, params, arng)
    if args.format == "list":
        out = [l for l in out if not l.startswith(("CREATE", "INSERT", "UPDATE", "ANALYZE"))
               and not l.startswith("-- table")]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
