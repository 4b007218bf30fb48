#!/usr/bin/env python3
"""Statement-by-statement comparison of PostgreSQL regression suite outputs.

Usage: compare.py --sqldir DIR --ref NAME=DIR --mode NAME=DIR [--mode ...]
                  [--allowed FILE] [--report FILE] [--tests FILE]
                  [--server-logs DIR] [--note MODE=TEXT ...] [--diff-lines N]
(scripts/pgsuite.sh runs it; see there.)

Each DIR holds one mode's results/*.out (pg_regress ran psql with echo-all,
so a .out file interleaves every input line with the output it produced).
The test's .sql input (in --sqldir) gives the statement boundaries: every
output file is cut into one block per statement (its echoed text, then its
output up to the echo of the next statement).  A block that differs from
the reference mode's block is classified:

  plan    the statement is an EXPLAIN (or calls a function of the test that
          runs EXPLAIN, or EXECUTEs a prepared EXPLAIN): only plan text
          differs; its errors, warnings and notices are the reference's
  order   no ORDER BY at the statement's top level (a FETCH/EXECUTE looks at
          its cursor's / prepared statement's query): the output is the
          reference's rows in another order (same lines, same header, same
          row-count footer, errors in place; per-row NOTICEs may move too)
  peers   there is a top-level ORDER BY of plain columns, and the rows only
          moved among ORDER BY peers (equal sort keys in the same sequence)
  subset  no top-level ORDER BY, and a LIMIT/OFFSET or a FETCH/MOVE on a
          cursor picks some of the rows: other rows, same header, same row
          count, same errors (which rows is unspecified without ORDER BY)
  listed  a legitimate difference listed, with its reason, in --allowed
  FAIL    anything else: other rows, errors, notices, a crash, a timeout,
          a test one mode could not run

With --server-logs DIR, each mode's server log (DIR/MODE/log/postgresql.log)
is read too: a crashed backend (signal, PANIC, TRAP), a disk daemon the
launcher had to restart, or a statement cancelled by statement_timeout is a
FAIL; the slowest statements (log_min_duration_statement) are listed.

Exit status: 0 if no FAIL, 1 if any, 2 on usage errors.  Standard library only.
"""

import argparse
import bisect
import collections
import difflib
import os
import re
import sys

# ----------------------------------------------------------------------------
# A small lexer of psql input: where statements start and end.


IDENT_START = re.compile(r'[A-Za-z_\x80-\uffff]')
IDENT = re.compile(r'[A-Za-z_\x80-\uffff][A-Za-z0-9_$\x80-\uffff]*')
DOLLAR_TAG = re.compile(r'\$([A-Za-z_\x80-\uffff][A-Za-z0-9_\x80-\uffff]*)?\$')
COPY_STDIN = re.compile(r'^\s*\\?copy\b.*\bfrom\s+(stdin|stdout|pstdin)\b', re.I | re.S)


class Statement:
    """One input statement: psql sends it at its end line."""

    def __init__(self, first, last, text, kind):
        self.first = first      # line index (0-based) where it starts
        self.last = last        # line index where it ends
        self.text = text        # its text (SQL, or the meta-command)
        self.kind = kind        # 'sql' or 'meta'


def lex_psql(lines):
    """Split psql input lines into statements.

    Follows psql's rules closely enough for the regression suite: quotes,
    E'' strings, dollar quotes, nested block comments, parentheses, the
    BEGIN ... END body of CREATE FUNCTION/PROCEDURE (BEGIN ATOMIC), \\; and
    backslash meta-commands (which end at the end of their line).  Lines of
    COPY FROM STDIN data are skipped.  ECHO none regions are noted so that
    their statements are not looked for in the output.
    psql does not echo an empty line unless it is inside a quoted string,
    a dollar quote or a comment: such lines land in not_echoed too.
    Returns (statements, not_echoed_line_set).
    """
    stmts = []
    buf = []            # characters of the current statement
    start = None        # first line of the current statement
    in_sq = in_dq = False
    sq_escape = False   # inside an E'' string
    dollar = None       # current dollar-quote tag text, e.g. '$$'
    comment = 0         # block comment nesting depth
    paren = 0
    begin_depth = 0
    idents = []         # first identifiers of the statement (CREATE FUNCTION?)
    copy_data = False
    echo = True
    not_echoed = set()

    def is_routine_def():
        w = [x.lower() for x in idents[:4]]
        if len(w) >= 2 and w[0] == 'create' and w[1] in ('function', 'procedure'):
            return True
        return (len(w) >= 4 and w[0] == 'create' and w[1] == 'or'
                and w[2] == 'replace' and w[3] in ('function', 'procedure'))

    def finish(line_no):
        nonlocal buf, start, paren, begin_depth, idents, copy_data
        text = ''.join(buf).strip()
        if text and start is not None:
            stmts.append(Statement(start, line_no, text, 'sql'))
            if COPY_STDIN.match(text):
                copy_data = True
        buf = []
        start = None
        paren = 0
        begin_depth = 0
        idents = []

    for ln, line in enumerate(lines):
        if not echo or (line == '' and not (in_sq or in_dq or dollar or comment)):
            not_echoed.add(ln)
        if copy_data:
            if line.rstrip('\r') == '\\.':
                copy_data = False
            continue
        i = 0
        n = len(line)
        while i < n:
            c = line[i]
            if comment:
                if line.startswith('/*', i):
                    comment += 1
                    i += 2
                elif line.startswith('*/', i):
                    comment -= 1
                    i += 2
                else:
                    i += 1
                continue
            if in_sq:
                if sq_escape and c == '\\':
                    buf.append(line[i:i + 2])
                    i += 2
                    continue
                if c == "'":
                    if line.startswith("''", i):
                        buf.append("''")
                        i += 2
                        continue
                    in_sq = False
                buf.append(c)
                i += 1
                continue
            if in_dq:
                if c == '"':
                    in_dq = False
                buf.append(c)
                i += 1
                continue
            if dollar:
                if line.startswith(dollar, i):
                    buf.append(dollar)
                    i += len(dollar)
                    dollar = None
                else:
                    buf.append(c)
                    i += 1
                continue
            # normal state
            if c.isspace():
                buf.append(c)
                i += 1
                continue
            if line.startswith('--', i):
                break
            if line.startswith('/*', i):
                comment = 1
                i += 2
                continue
            if start is None and c != '\\':
                start = ln
            if c == "'":
                prev = line[i - 1] if i > 0 else ' '
                prev2 = line[i - 2] if i > 1 else ' '
                sq_escape = prev in 'eE' and not (prev2.isalnum() or prev2 == '_')
                in_sq = True
                buf.append(c)
                i += 1
                continue
            if c == '"':
                in_dq = True
                buf.append(c)
                i += 1
                continue
            if c == '$':
                prev = line[i - 1] if i > 0 else ' '
                m = DOLLAR_TAG.match(line, i)
                if m and not (prev.isalnum() or prev == '_'):
                    dollar = m.group(0)
                    buf.append(dollar)
                    i = m.end()
                    continue
                buf.append(c)
                i += 1
                continue
            if c == '(':
                paren += 1
            elif c == ')':
                paren = max(0, paren - 1)
            elif c == ';':
                buf.append(c)
                i += 1
                if paren == 0 and begin_depth == 0:
                    finish(ln)
                continue
            elif c == '\\':
                if line.startswith('\\;', i):
                    buf.append(';')
                    i += 2
                    continue
                # a meta-command: to the end of the line
                meta = line[i:].strip()
                if ''.join(buf).strip():
                    # it ends (\g, \gset, \gx, ...) or acts on the buffer
                    text = ''.join(buf).strip() + ' ' + meta
                    stmts.append(Statement(start, ln, text, 'sql'))
                    if COPY_STDIN.match(text):
                        copy_data = True
                else:
                    stmts.append(Statement(ln, ln, meta, 'meta'))
                    if COPY_STDIN.match(meta):
                        copy_data = True
                    if re.match(r'\\set\s+ECHO\s+(none|queries|errors)\b', meta):
                        echo = False
                    elif re.match(r'\\set\s+ECHO\s+all\b', meta):
                        echo = True
                buf = []
                start = None
                paren = 0
                begin_depth = 0
                idents = []
                break
            elif IDENT_START.match(c):
                m = IDENT.match(line, i)
                word = m.group(0)
                low = word.lower()
                if len(idents) < 4:
                    idents.append(word)
                if paren == 0 and is_routine_def():
                    if low == 'begin':
                        begin_depth += 1
                    elif low == 'case' and begin_depth > 0:
                        begin_depth += 1
                    elif low == 'end' and begin_depth > 0:
                        begin_depth -= 1
                buf.append(word)
                i = m.end()
                continue
            buf.append(c)
            i += 1
        buf.append('\n')
    finish(len(lines) - 1)
    return stmts, not_echoed


# ----------------------------------------------------------------------------
# What a statement is.


def tokens(sql):
    """Crude tokens of SQL with strings/comments removed, and paren depth."""
    out = []
    depth = 0
    i = 0
    n = len(sql)
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
        elif sql.startswith('--', i):
            j = sql.find('\n', i)
            i = n if j < 0 else j
        elif sql.startswith('/*', i):
            j = sql.find('*/', i)
            i = n if j < 0 else j + 2
        elif c == "'":
            j = i + 1
            while j < n:
                if sql[j] == "'" and sql.startswith("''", j):
                    j += 2
                elif sql[j] == "'":
                    break
                else:
                    j += 1
            out.append(("'", depth))
            i = j + 1
        elif c == '"':
            j = sql.find('"', i + 1)
            j = n if j < 0 else j
            out.append((sql[i + 1:j].lower(), depth))
            i = j + 1
        elif c == '$' and DOLLAR_TAG.match(sql, i):
            tag = DOLLAR_TAG.match(sql, i).group(0)
            j = sql.find(tag, i + len(tag))
            out.append(('$body', depth))
            i = n if j < 0 else j + len(tag)
        elif c == '(':
            depth += 1
            i += 1
        elif c == ')':
            depth -= 1
            i += 1
        elif IDENT_START.match(c):
            m = IDENT.match(sql, i)
            out.append((m.group(0).lower(), depth))
            i = m.end()
        elif c.isdigit():
            m = re.match(r'[0-9.]+', sql[i:])
            out.append((m.group(0), depth))
            i += len(m.group(0))
        else:
            out.append((c, depth))
            i += 1
    return out


def order_by_keys(sql):
    """None if no top-level ORDER BY; else the list of its keys, each a
    column name / ordinal (str) or None when it is an expression."""
    toks = tokens(sql)
    # depth 0 of the statement; for EXPLAIN/DECLARE/PREPARE/CREATE ... AS the
    # query is also at depth 0
    pos = None
    for k in range(len(toks) - 1):
        if toks[k] == ('order', 0) and toks[k + 1] == ('by', 0):
            pos = k + 2     # the last one at depth 0 wins
    if pos is None:
        return None
    keys = []
    cur = []
    stop = {'limit', 'offset', 'fetch', 'for', 'returning', ';', 'with'}
    for tok, d in toks[pos:]:
        if d == 0 and tok in stop:
            break
        if d == 0 and tok == ',':
            keys.append(cur)
            cur = []
            continue
        cur.append((tok, d))
    keys.append(cur)
    result = []
    for key in keys:
        words = [t for t, _ in key if t not in ('asc', 'desc', 'nulls', 'first', 'last')]
        # a.b -> b ; plain identifier or ordinal
        if len(words) == 1 and (IDENT.fullmatch(words[0]) or words[0].isdigit()):
            result.append(words[0])
        elif len(words) == 3 and words[1] == '.' and IDENT.fullmatch(words[2]):
            result.append(words[2])
        else:
            result.append(None)
    return result


def has_limit(sql):
    """A top-level LIMIT / OFFSET / FETCH FIRST."""
    return any(d == 0 and t in ('limit', 'offset', 'fetch') for t, d in tokens(sql)[1:])


class FileInfo:
    """Per-test knowledge: cursors, prepared statements, EXPLAIN functions."""

    def __init__(self, stmts):
        self.cursors = {}
        self.prepared = {}
        self.explain_funcs = set()
        for st in stmts:
            if st.kind != 'sql':
                continue
            toks = tokens(st.text)
            words = [t for t, _ in toks]
            if not words:
                continue
            if words[0] == 'declare' and len(words) > 1:
                self.cursors[words[1]] = st.text
            elif words[0] == 'prepare' and len(words) > 1:
                self.prepared[words[1]] = st.text
            elif words[0] == 'create' and ('function' in words[:4] or 'procedure' in words[:4]):
                k = words.index('function') if 'function' in words[:4] else words.index('procedure')
                if k + 1 < len(words):
                    name = words[k + 1]
                    if k + 3 < len(words) and words[k + 2] == '.':
                        name = words[k + 3]
                    # runs EXPLAIN itself, or is named for it (explain_filter
                    # EXECUTEs the EXPLAIN text it is given)
                    if 'explain' in name or re.search(r'\bexplain\b', st.text, re.I):
                        self.explain_funcs.add(name)

    def effective_query(self, sql):
        """The query whose rows a statement returns (cursor / prepared)."""
        toks = [t for t, _ in tokens(sql)]
        if not toks:
            return sql
        if toks[0] in ('fetch', 'move'):
            for t in toks[1:]:
                if t in self.cursors:
                    return self.cursors[t]
        if toks[0] == 'execute' and len(toks) > 1 and toks[1] in self.prepared:
            return self.prepared[toks[1]]
        return sql

    def is_plan(self, sql):
        """An EXPLAIN, an EXECUTE of a prepared EXPLAIN, or a call of one
        of the test's functions that run EXPLAIN."""
        toks = tokens(sql)
        words = [t for t, _ in toks]
        if not words:
            return False
        if words[0] == 'explain':
            return True
        if words[0] == 'execute' and len(words) > 1 and words[1] in self.prepared:
            ptoks = tokens(self.prepared[words[1]])
            for k, (t, d) in enumerate(ptoks[:-1]):
                if t == 'as' and d == 0:
                    return ptoks[k + 1][0] == 'explain'
            return False
        return any(t in self.explain_funcs for t in words)


# ----------------------------------------------------------------------------
# Cutting an output file into per-statement blocks.


class Unit:
    """Consecutive statements sharing lines: the unit of comparison."""

    def __init__(self, stmts):
        self.stmts = stmts
        self.first = stmts[0].first
        self.last = stmts[-1].last
        # lines the first statement occupies: echoed back to back
        self.echo_last = stmts[0].last


def make_units(stmts):
    units = []
    cur = []
    for st in stmts:
        if cur and st.first <= cur[-1].last:
            cur.append(st)
        else:
            if cur:
                units.append(Unit(cur))
            cur = [st]
    if cur:
        units.append(Unit(cur))
    return units


def cut_blocks(units, sql_lines, out_lines, not_echoed):
    """Blocks of out_lines per unit: {unit index: (start, end)}; a unit whose
    echo is not found gets no block (its output goes to the previous one)."""
    where = collections.defaultdict(list)
    for k, l in enumerate(out_lines):
        where[l].append(k)
    anchors = []
    pos = 0
    for ui, u in enumerate(units):
        if u.first in not_echoed:
            continue
        first = sql_lines[u.first]
        cand = where.get(first, [])
        k = bisect.bisect_left(cand, pos)
        found = None
        span = [sql_lines[k] for k in range(u.first, u.echo_last + 1) if k not in not_echoed]
        while k < len(cand):
            p = cand[k]
            if out_lines[p:p + len(span)] == span:
                found = p
                break
            k += 1
        if found is None:
            continue
        anchors.append((ui, found))
        pos = found + len(span)
    blocks = {}
    head_end = anchors[0][1] if anchors else len(out_lines)
    for j, (ui, p) in enumerate(anchors):
        end = anchors[j + 1][1] if j + 1 < len(anchors) else len(out_lines)
        blocks[ui] = (p, end)
    return blocks, head_end


# ----------------------------------------------------------------------------
# Classifying a difference.


MSG = re.compile(r'^(psql:.*?:\s*)?(ERROR|WARNING|NOTICE|FATAL|PANIC|INFO|DETAIL|HINT|CONTEXT):|'
                 r'server closed the connection|connection to server|'
                 r'no connection to the server|terminating connection|'
                 r'could not connect|canceling statement')
SEP = re.compile(r'^-+(\+-+)*$')
FOOT = re.compile(r'^\((\d+) rows?\)$')


def msg_lines(block):
    return [l for l in block if MSG.search(l)]


ROW_MSG = re.compile(r'^(NOTICE|INFO|WARNING|DETAIL|CONTEXT):')


def structure(block):
    """Lines that must stay in place when rows are reordered: headers,
    separators, footers, errors, blank lines.  NOTICE/INFO/WARNING lines
    (and their DETAIL/CONTEXT) may move: a function called once per row
    raises them in the order the rows are read."""
    s = []
    for k, l in enumerate(block):
        nxt = block[k + 1] if k + 1 < len(block) else ''
        if ROW_MSG.match(l):
            continue
        if SEP.match(l) or FOOT.match(l) or MSG.search(l) or not l.strip() or SEP.match(nxt):
            s.append((k, l))
    return s


def same_rows_reordered(a, b):
    return (len(a) == len(b) and sorted(a) == sorted(b)
            and structure(a) == structure(b))


def same_shape(a, b):
    """Same length, same header/separator/footer/errors in place: only
    row lines (and per-row notices) differ."""
    return len(a) == len(b) and structure(a) == structure(b)


def table_rows(block):
    """(header cells, rows as cell lists) of the single aligned table in a
    block, or None."""
    seps = [k for k, l in enumerate(block) if SEP.match(l)]
    if len(seps) != 1 or seps[0] == 0:
        return None
    s = seps[0]
    header = [c.strip() for c in block[s - 1].split('|')]
    rows = []
    for l in block[s + 1:]:
        if FOOT.match(l):
            break
        if l.endswith('+') or '+|' in l:
            return None         # multi-line cells: give up
        rows.append([c.strip() for c in l.split('|')])
    return header, rows


def only_peers_moved(keys, a, b):
    """With ORDER BY keys (names/ordinals), did rows move only among peers?"""
    if not keys or None in keys:
        return False
    ta, tb = table_rows(a), table_rows(b)
    if ta is None or tb is None or ta[0] != tb[0]:
        return False
    header = ta[0]
    idx = []
    for key in keys:
        if key.isdigit():
            j = int(key) - 1
        elif header.count(key) == 1:
            j = header.index(key)
        else:
            return False
        if not 0 <= j < len(header):
            return False
        idx.append(j)
    try:
        ka = [tuple(r[j] for j in idx) for r in ta[1]]
        kb = [tuple(r[j] for j in idx) for r in tb[1]]
    except IndexError:
        return False
    return ka == kb


def load_allowed(path):
    rules = []
    if not path or not os.path.exists(path):
        return rules
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            parts = [p.strip() for p in line.split(' :: ', 4)]
            if len(parts) not in (4, 5):
                sys.exit('%s:%d: expected "test :: modes :: regex :: reason [:: expect]"'
                         % (path, n))
            test, modes, pattern, reason = parts[:4]
            expect = parts[4] if len(parts) == 5 else None
            if expect is not None and expect != '=rows':
                expect = re.compile(expect, re.I | re.M)
            modes = None if modes == '*' else set(modes.split(','))
            rules.append((test, modes, re.compile(pattern, re.I | re.S), reason, n, expect))
    return rules


def without_row_msgs(block):
    return [l for l in block if not ROW_MSG.match(l)]


def rule_applies(rule, test, mode, text, ra, rb):
    """An allowed-list line covers this difference: same test, mode, a
    statement matching its regex, and the mode's output as it expects
    (=rows: only NOTICE/INFO/WARNING lines differ; else a regex the mode's
    block must match), so that another deviation of the same statement is
    not hidden."""
    test_pat, modes, pat, reason, n, expect = rule
    if test_pat != test or (modes is not None and mode not in modes) or not pat.search(text):
        return False
    if expect is None:
        return True
    if expect == '=rows':
        return without_row_msgs(ra) == without_row_msgs(rb)
    return expect.search('\n'.join(rb)) is not None


def message_change(ra, rb):
    """A short account of the errors/warnings that differ, or ''."""
    ma = [l for l in msg_lines(ra) if not l.startswith(('DETAIL', 'CONTEXT', 'HINT'))]
    mb = [l for l in msg_lines(rb) if not l.startswith(('DETAIL', 'CONTEXT', 'HINT'))]
    if ma == mb:
        return ''
    only_a = [l for l in ma if l not in mb]
    only_b = [l for l in mb if l not in ma]
    parts = []
    if only_b:
        parts.append('mode says: ' + ' / '.join(l.strip() for l in only_b[:2]))
    if only_a:
        parts.append('reference says: ' + ' / '.join(l.strip() for l in only_a[:2]))
    return '; '.join(parts) or 'messages in another order or number'


def classify(info, unit, ra, rb, allowed, test, mode):
    """Returns (class, why)."""
    cls, why = classify1(info, unit, ra, rb, allowed, test, mode)
    if cls == 'FAIL':
        change = message_change(ra, rb)
        if change:
            why = (why + ': ' if why else '') + change
    return cls, why


def classify1(info, unit, ra, rb, allowed, test, mode):
    sqls = [st.text for st in unit.stmts if st.kind == 'sql']
    text = '\n'.join(st.text for st in unit.stmts)
    for rule in allowed:
        if rule_applies(rule, test, mode, text, ra, rb):
            return 'listed', rule[3]
    if sqls and all(info.is_plan(s) for s in sqls):
        if msg_lines(ra) == msg_lines(rb):
            return 'plan', ''
        return 'FAIL', 'EXPLAIN with different messages'
    if sqls and same_rows_reordered(ra, rb):
        queries = [info.effective_query(s) for s in sqls]
        keys = [order_by_keys(q) for q in queries]
        if all(k is None for k in keys):
            return 'order', ''
        if len(sqls) == 1 and only_peers_moved(keys[0], ra, rb):
            return 'peers', ''
        return 'FAIL', 'rows in another order despite ORDER BY'
    if len(sqls) == 1 and same_shape(ra, rb):
        words = [t for t, _ in tokens(sqls[0])]
        query = info.effective_query(sqls[0])
        if order_by_keys(query) is None and \
                (words[:1] in (['fetch'], ['move']) or has_limit(query)):
            return 'subset', ''
    return 'FAIL', ''


# ----------------------------------------------------------------------------


def read_lines(path):
    with open(path, encoding='utf-8', errors='surrogateescape') as f:
        return f.read().split('\n')


def strip_blank_edges(block):
    a, b = 0, len(block)
    while a < b and not block[a].strip():
        a += 1
    while b > a and not block[b - 1].strip():
        b -= 1
    return block[a:b]


def small_diff(a, b, limit):
    d = list(difflib.unified_diff(a, b, 'reference', 'mode', n=1, lineterm=''))[2:]
    if len(d) > limit:
        d = d[:limit] + ['... (%d more diff lines)' % (len(d) - limit)]
    return d


def compare_test(test, sqldir, refdir, modedir, allowed, mode):
    """Yields (class, unit_desc, why, diff_lines) for each difference; returns
    via StopIteration-free list.  Also counts compared statements."""
    results = []
    sqlpath = os.path.join(sqldir, test + '.sql')
    refout = os.path.join(refdir, 'results', test + '.out')
    modeout = os.path.join(modedir, 'results', test + '.out')
    if not os.path.exists(refout) or not os.path.exists(modeout):
        which = []
        if not os.path.exists(refout):
            which.append('reference')
        if not os.path.exists(modeout):
            which.append('mode')
        results.append(('FAIL', None, 'no output file (%s)' % ', '.join(which), []))
        return results, 0
    out_a = read_lines(refout)
    out_b = read_lines(modeout)
    if out_a == out_b:
        return results, -1
    if not os.path.exists(sqlpath):
        results.append(('FAIL', None, 'no input .sql to cut the output; files differ',
                        small_diff(out_a, out_b, 30)))
        return results, 0
    sql_lines = read_lines(sqlpath)
    stmts, not_echoed = lex_psql(sql_lines)
    info = FileInfo(stmts)
    units = make_units(stmts)
    ba, head_a = cut_blocks(units, sql_lines, out_a, not_echoed)
    bb, head_b = cut_blocks(units, sql_lines, out_b, not_echoed)
    if out_a[:head_a] != out_b[:head_b]:
        results.append(('FAIL', None, 'output before the first statement differs',
                        small_diff(out_a[:head_a], out_b[:head_b], 30)))
    n = 0
    for ui, u in enumerate(units):
        in_a, in_b = ui in ba, ui in bb
        if not in_a and not in_b:
            continue
        n += 1
        ra = strip_blank_edges(out_a[ba[ui][0]:ba[ui][1]]) if in_a else []
        rb = strip_blank_edges(out_b[bb[ui][0]:bb[ui][1]]) if in_b else []
        if ra == rb:
            continue
        if in_a != in_b:
            side = 'mode' if in_a else 'reference'
            later = [k for k in range(ui + 1, len(units)) if k in (ba if in_a else bb)]
            if not any(k in (bb if in_a else ba) for k in later):
                # psql stopped here (a crash, a lost connection, \quit):
                # one failure for the rest of the file
                results.append(('FAIL', u, '%s stopped before this statement; %d statement(s) '
                                'from here on not reached' % (side, 1 + len(later)),
                                small_diff(ra, rb, 10 ** 6)))
                break
            cls, why = 'FAIL', 'statement not reached in %s' % side
        else:
            cls, why = classify(info, u, ra, rb, allowed, test, mode)
        results.append((cls, u, why, small_diff(ra, rb, 10 ** 6)))
        if cls == 'listed':
            for rule in allowed:
                if rule_applies(rule, test, mode, '\n'.join(st.text for st in u.stmts), ra, rb):
                    USED_RULES.add(rule[4])
    return results, n


CRASH = re.compile(r'terminated by signal|\bPANIC:|TRAP:|'
                   r'active_pg disk \d+ \(pid \d+\) .*restarting')
DURATION = re.compile(r'duration: ([0-9.]+) ms\s+statement: (.*)')
TIMEOUT = re.compile(r'canceling statement due to statement timeout')


def scan_server_log(path):
    """(problems, slow statements) of one server log."""
    problems, slow = [], []
    if not os.path.exists(path):
        return ['no server log at %s' % path], slow
    lines = read_lines(path)
    for k, l in enumerate(lines):
        if CRASH.search(l) or TIMEOUT.search(l):
            what = l.strip()
            # the statement it was running
            for nxt in lines[k + 1:k + 4]:
                m = re.search(r'(Failed process was running|STATEMENT):\s*(.*)', nxt)
                if m:
                    what += '  <<' + m.group(2).strip()[:200] + '>>'
                    break
            problems.append(what)
        m = DURATION.search(l)
        if m:
            text = m.group(2).strip()
            for nxt in lines[k + 1:k + 6]:
                if not nxt.startswith('\t'):
                    break
                text += ' ' + nxt.strip()
            slow.append((float(m.group(1)), text[:200]))
    slow.sort(reverse=True)
    return problems, slow


USED_RULES = set()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sqldir', required=True)
    ap.add_argument('--ref', required=True, help='NAME=DIR of the reference mode')
    ap.add_argument('--mode', action='append', default=[], help='NAME=DIR (repeatable)')
    ap.add_argument('--allowed')
    ap.add_argument('--report')
    ap.add_argument('--tests', help='file listing the tests in schedule order')
    ap.add_argument('--note', action='append', default=[], help='MODE=TEXT shown in the summary')
    ap.add_argument('--diff-lines', type=int, default=12)
    ap.add_argument('--server-logs', help='DIR with MODE/log/postgresql.log')
    args = ap.parse_args()

    refname, refdir = args.ref.split('=', 1)
    modes = [m.split('=', 1) for m in args.mode]
    notes = dict(n.split('=', 1) for n in args.note)
    allowed = load_allowed(args.allowed)
    if args.tests:
        with open(args.tests) as f:
            tests = [t for t in f.read().split() if t]
    else:
        tests = sorted(f[:-4] for f in os.listdir(os.path.join(refdir, 'results'))
                       if f.endswith('.out'))

    console = []
    full = []
    classes = ['plan', 'order', 'peers', 'subset', 'listed', 'FAIL']
    any_fail = False
    for name, d in modes:
        counts = collections.Counter()
        fails = []
        others = []
        stmts_total = 0
        for test in tests:
            res, n = compare_test(test, args.sqldir, refdir, d, allowed, name)
            if n == -1:
                counts['identical tests'] += 1
            else:
                stmts_total += n
            for cls, u, why, diff in res:
                counts[cls] += 1
                (fails if cls == 'FAIL' else others).append((test, cls, u, why, diff))
        any_fail = any_fail or bool(fails)
        summary = ('mode %-8s vs %s: %d tests, %d identical files; differing statements: %s%s'
                   % (name, refname, len(tests), counts['identical tests'],
                      ', '.join('%s %d' % (c, counts[c]) for c in classes),
                      ('  [%s]' % notes[name]) if name in notes else ''))
        console.append(summary)
        full.append(summary)

        def describe(test, cls, u, why, diff, limit):
            out = []
            if u is None:
                out.append('  %s [%s] %s: %s' % (cls, name, test, why))
            else:
                first = [l for l in '\n'.join(st.text for st in u.stmts).split('\n')]
                head = ' | '.join(l.strip() for l in first[:3])
                if len(head) > 160:
                    head = head[:157] + '...'
                out.append('  %s [%s] %s.sql:%d: %s%s' % (cls, name, test, u.first + 1, head,
                                                           (' -- ' + why) if why else ''))
            shown = diff if limit is None else diff[:limit]
            out.extend('      ' + l for l in shown)
            if limit is not None and len(diff) > limit:
                out.append('      ... (%d more diff lines; full report has all)' % (len(diff) - limit))
            return out

        folded = 0
        prev_test = None
        for f in fails:
            full.extend(describe(*f, limit=None))
            aftermath = 'current transaction is aborted' in f[3] and f[0] == prev_test
            if aftermath:
                folded += 1
                continue
            if folded:
                console.append('      (and %d more statement(s) after it failing with "current '
                               'transaction is aborted"; full report has them)' % folded)
                folded = 0
            console.extend(describe(*f, limit=args.diff_lines))
            prev_test = f[0]
        if folded:
            console.append('      (and %d more statement(s) after it failing with "current '
                           'transaction is aborted"; full report has them)' % folded)
        for o in others:
            full.extend(describe(*o, limit=40))
    if args.server_logs:
        for name in [refname] + [m for m, _ in modes]:
            problems, slow = scan_server_log(
                os.path.join(args.server_logs, name, 'log', 'postgresql.log'))
            line = 'server log %-8s: %d crash/restart/timeout line(s); %d statements over '\
                   'log_min_duration_statement' % (name, len(problems), len(slow))
            console.append(line)
            full.append(line)
            for p in problems:
                console.append('  FAIL [%s] server log: %s' % (name, p))
                full.append('  FAIL [%s] server log: %s' % (name, p))
                any_fail = True
            for ms, st in slow[:5]:
                console.append('      slow [%s] %8.1f s  %s' % (name, ms / 1000, st))
            for ms, st in slow:
                full.append('      slow [%s] %8.1f s  %s' % (name, ms / 1000, st))
    unused = [r for r in allowed if r[4] not in USED_RULES]
    if unused:
        msg = 'allowed list entries that matched nothing: lines %s' % ', '.join(str(r[4]) for r in unused)
        console.append(msg)
        full.append(msg)
    verdict = 'pgsuite: FAILED (differences above)' if any_fail else 'pgsuite: every mode matches the reference'
    console.append(verdict)
    full.append(verdict)
    print('\n'.join(console))
    if args.report:
        with open(args.report, 'w', encoding='utf-8', errors='surrogateescape') as f:
            f.write('\n'.join(full) + '\n')
    return 1 if any_fail else 0


if __name__ == '__main__':
    sys.exit(main())
