"""The table of the differential test (scripts/gen_differential.py): its
columns, the values its rows hold, and the SQL that creates and fills it.
Python 3 standard library only; output depends only on the caller's rng."""

# --------------------------------------------------------------------------
# The table.  "Edge" columns hold extreme values in a few rows, so any
# arithmetic on them errors (overflow) on those rows; "safe" columns hold
# moderate values so that arithmetic on them overflows only sometimes
# (nested products, large constants).

COLUMNS = [
    # name, SQL type, logical type
    ("id", "int4", "int4"),
    ("b", "bool", "bool"),
    ("i2", "int2", "int2"),        # edge
    ("k2", "int2", "int2"),        # safe: |k2| <= 181, k2*k2 fits int2
    ("i4", "int4", "int4"),        # edge
    ("j4", "int4", "int4"),        # safe: |j4| <= 46340
    ("i8", "int8", "int8"),        # edge
    ("j8", "int8", "int8"),        # safe: |j8| <= 3037000499
    ("f4", "float4", "float4"),    # edge
    ("f8", "float8", "float8"),    # edge
    ("g8", "float8", "float8"),    # safe-ish: NaN/inf/-0 but no extremes
    ("n", "numeric", "numeric"),   # edge
    ("m", "numeric", "numeric"),   # safe
    ("n2", "numeric(15,2)", "numeric"),
    ("d", "date", "date"),         # edge
    ("d2", "date", "date"),        # safe: 1992..1998
    ("ts", "timestamp", "timestamp"),
    ("tz", "timestamptz", "timestamptz"),
    ("t", "text", "text"),
    ("tc", 'text COLLATE "C"', "textC"),
    ("v", "varchar(10)", "varchar"),
    ("c", "char(6)", "bpchar"),
]

# columns by logical type, with weights (safe columns preferred)
COLS_BY_TYPE = {
    "bool": [("b", 1)],
    "int2": [("i2", 1), ("k2", 4)],
    "int4": [("i4", 1), ("j4", 4), ("id", 1)],
    "int8": [("i8", 1), ("j8", 4)],
    "float4": [("f4", 1)],
    "float8": [("f8", 1), ("g8", 3)],
    "numeric": [("n", 1), ("m", 3), ("n2", 2)],
    "date": [("d", 1), ("d2", 3)],
    "timestamp": [("ts", 1)],
    "timestamptz": [("tz", 1)],
    "text": [("t", 1)],
    "textC": [("tc", 1)],
    "varchar": [("v", 1)],
    "bpchar": [("c", 1)],
}

STRINGS = [
    "", " ", "  ", "abc", "abc ", "abc  ", "ABC", "Abc", "aBc", "a", "A", "b",
    "a%b_c", "a%", "%", "_", "a_c", "ab\\c", "\\", "x\\%y", "it's", "é", "É",
    "ée", "Ünïcödé", "naïve café", "日本語", "日本", "😀", "a😀b", "ß", "ǅ",
    "hello world", "HELLO", "Hello World", "zzz", "xyz", "x", "y3", "k5",
    "row 1", "row 10", "row 100", "ROW 1", "0", "10", "9", "-1", "1.5",
    "tab\there", "line\nbreak", "MiXeD CaSe", "trailing   ", "   leading",
]

WORDS = ["alpha", "beta", "gamma", "delta", "ab", "ba", "abc", "cab", "x",
         "yz", "lorem", "ipsum", "dolor", "sit", "amet", "foo", "bar",
         "baz", "qux", "é", "ü", "日", "A", "B", "C", "%", "_", "\\"]


def q(s):
    """SQL string literal (standard_conforming_strings = on)."""
    if "\t" in s or "\n" in s:
        return "E'" + s.replace("\\", "\\\\").replace("'", "\\'") \
            .replace("\t", "\\t").replace("\n", "\\n") + "'"
    return "'" + s.replace("'", "''") + "'"


def fmt_float(x):
    r = repr(float(x))
    if r == "nan":
        return "NaN"
    if r == "inf":
        return "Infinity"
    if r == "-inf":
        return "-Infinity"
    return r


class Values:
    """Edge and ordinary values per column, as SQL literals."""

    def __init__(self, rng):
        self.rng = rng

    EDGE = {
        "b": ["true", "false"],
        "i2": ["-32768", "32767", "0", "1", "-1", "182", "-182"],
        "k2": ["181", "-181", "0", "1", "-1"],
        "i4": ["-2147483648", "2147483647", "0", "1", "-1", "46341",
               "-46341", "65536"],
        "j4": ["46340", "-46340", "0", "1", "-1"],
        "i8": ["-9223372036854775808", "9223372036854775807", "0", "1",
               "-1", "3037000500", "4294967296"],
        "j8": ["3037000499", "-3037000499", "0", "1", "-1"],
        "f4": ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0",
               "'3.4028235e38'", "'-3.4028235e38'", "'1.4e-45'",
               "'1.1754944e-38'", "'0.1'", "'16777217'", "'1e-10'"],
        "f8": ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0",
               "'1.7976931348623157e308'", "'-1.7976931348623157e308'",
               "'5e-324'", "'2.2250738585072014e-308'", "'0.1'",
               "'9007199254740993'", "'1e300'", "'-1e-300'"],
        "g8": ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0", "0.5",
               "'0.1'"],
        "n": ["'NaN'", "'Infinity'", "'-Infinity'", "0", "1e100", "-1e100",
              "1e-20", "-1e-20", "123456789012345678901234567890.123456789",
              "-123456789012345678901234567890.123456789",
              "99999999999999999999.99999999999999999999", "1.50", "0.06",
              "0.000000000000000000001", "2147483647.5", "-2147483648.5",
              "9223372036854775807", "1e-100"],
        "m": ["0", "0.0", "1.50", "-1.5", "0.06", "100", "0.0001",
              "999999.9999", "-999999.9999"],
        "n2": ["9999999999999.99", "-9999999999999.99", "0.00", "'NaN'",
               "0.01", "-0.01", "1.50", "0.06", "24.00", "0.07", "0.05"],
        "d": ["'infinity'", "'-infinity'", "'4713-01-01 BC'",
              "'5874897-12-31'", "'2000-02-29'", "'1970-01-01'",
              "'0001-01-01'", "'1999-12-31'", "'294276-12-31'",
              "'294277-01-01'", "'1994-01-01'"],
        "d2": ["'1992-01-01'", "'1998-12-31'", "'1994-01-01'",
               "'1995-02-28'", "'1996-02-29'"],
        "ts": ["'infinity'", "'-infinity'", "'4713-01-01 00:00:00 BC'",
               "'294276-12-31 23:59:59.999999'", "'2000-02-29 12:34:56.789'",
               "'1970-01-01 00:00:00'", "'1994-01-01 00:00:00'",
               "'1993-12-31 23:59:59.999999'", "'0001-01-01 00:00:00'",
               "'1995-06-30 12:00:00'"],
        "tz": ["'infinity'", "'-infinity'", "'4713-01-01 00:00:00+00 BC'",
               "'294276-12-31 23:59:59.999999+00'",
               "'2000-02-29 12:34:56.789+05:30'", "'1970-01-01 00:00:00+00'",
               "'1994-01-01 00:00:00+00'", "'1994-01-01 00:00:00-08'",
               "'1995-03-26 02:30:00+01'"],
        "t": None, "tc": None, "v": None, "c": None,
    }

    def edge(self, col, k):
        e = self.EDGE[col]
        if e is None:
            e = [q(s) for s in self.strings_for(col)]
        return e[k % len(e)]

    def strings_for(self, col):
        if col == "v":
            return [s for s in STRINGS if len(s) <= 10]
        if col == "c":
            return [s for s in STRINGS if len(s) <= 6]
        return STRINGS

    def random_string(self, maxlen):
        rng = self.rng
        r = rng.random()
        if r < 0.3:
            cands = [s for s in STRINGS if len(s) <= maxlen]
            return rng.choice(cands)
        if r < 0.5:
            s = rng.choice(["row ", "k", "ROW ", ""]) + str(rng.randint(0, 300))
        else:
            s = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.1:
            s += " " * rng.randint(1, 3)
        return s[:maxlen]

    def ordinary(self, col):
        rng = self.rng
        if col == "b":
            return rng.choice(["true", "false"])
        if col == "i2":
            return str(rng.randint(-1000, 1000))
        if col == "k2":
            return str(rng.randint(-181, 181))
        if col == "i4":
            return str(rng.choice([rng.randint(-1000, 1000),
                                   rng.randint(-2000000000, 2000000000)]))
        if col == "j4":
            return str(rng.choice([rng.randint(-100, 100),
                                   rng.randint(-46340, 46340)]))
        if col == "i8":
            return str(rng.choice([rng.randint(-1000, 1000),
                                   rng.randint(-2**62, 2**62)]))
        if col == "j8":
            return str(rng.choice([rng.randint(-100, 100),
                                   rng.randint(-3037000499, 3037000499)]))
        if col == "f4":
            return "'" + fmt_float(round(rng.uniform(-1000, 1000),
                                         rng.randint(0, 3))) + "'"
        if col in ("f8", "g8"):
            r = rng.random()
            if r < 0.4:
                x = round(rng.uniform(-1000, 1000), rng.randint(0, 3))
            elif r < 0.8:
                x = rng.uniform(-1e6, 1e6)
            else:
                x = rng.randint(-50, 50) / 8.0
            return "'" + fmt_float(x) + "'"
        if col in ("n", "m", "n2"):
            scale = rng.randint(0, 2) if col == "n2" else rng.randint(0, 6)
            mag = rng.choice([10, 1000, 100000, 10**9]) if col != "m" \
                else rng.choice([10, 1000, 100000])
            v = rng.randint(-mag * 10**scale, mag * 10**scale)
            s = str(abs(v)).rjust(scale + 1, "0")
            lit = ("-" if v < 0 else "") + (s[:-scale] + "." + s[-scale:]
                                             if scale else s)
            return lit
        if col in ("d", "d2"):
            y = rng.randint(1992, 1998)
            return "'%04d-%02d-%02d'" % (y, rng.randint(1, 12), rng.randint(1, 28))
        if col == "ts":
            return "'%04d-%02d-%02d %02d:%02d:%02d%s'" % (
                rng.randint(1992, 1998), rng.randint(1, 12), rng.randint(1, 28),
                rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
                rng.choice(["", ".5", ".123456", ".000001"]))
        if col == "tz":
            return "'%04d-%02d-%02d %02d:%02d:%02d%s'" % (
                rng.randint(1992, 1998), rng.randint(1, 12), rng.randint(1, 28),
                rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
                rng.choice(["+00", "-08", "+05:30", "+01"]))
        if col in ("t", "tc"):
            return q(self.random_string(20))
        if col == "v":
            return q(self.random_string(10))
        if col == "c":
            return q(self.random_string(6))
        raise ValueError(col)


def gen_setup(rng, nrows, out):
    vals = Values(rng)
    out.append("-- table dt: every evaluated type, NULLs, edge values")
    out.append("CREATE TABLE dt (\n\t" + ",\n\t".join(
        "%s %s" % (n, t) for n, t, _ in COLUMNS) + "\n);")
    names = [n for n, _, _ in COLUMNS]
    rows = []
    nedge = 24
    for r in range(1, nrows + 1):
        row = []
        for col, sqlt, _ in COLUMNS:
            if col == "id":
                row.append(str(r))
                continue
            if r <= nedge:
                # first rows: every column walks through its edge values;
                # row 1 is all NULL
                v = "NULL" if r == 1 else vals.edge(col, r - 2 + names.index(col))
            else:
                x = rng.random()
                if x < 0.08:
                    v = "NULL"
                elif x < 0.095:
                    v = vals.edge(col, rng.randint(0, 100))
                else:
                    v = vals.ordinary(col)
            row.append(v)
        rows.append("(" + ", ".join(row) + ")")
    for i in range(0, len(rows), 500):
        out.append("INSERT INTO dt VALUES\n" + ",\n".join(rows[i:i + 500]) + ";")
    # wide values: compressed inline and TOASTed out of line
    out.append("UPDATE dt SET t = repeat('abc ', 1000), tc = repeat('Xy', 2000) "
               "WHERE id = %d;" % (nrows - 1))
    out.append("UPDATE dt SET t = (SELECT string_agg(md5(i::text), '') "
               "FROM generate_series(1, 200) i), tc = 'toast' WHERE id = %d;" % nrows)
    out.append("ANALYZE dt;")
