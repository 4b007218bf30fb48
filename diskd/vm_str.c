/*
 * vm_str.c
 *	  The VM's strings: LIKE/ILIKE, substring, length, upper/lower, ||.
 *
 * Rules of this file:
 *  - Characters are UTF8 when the server encoding is UTF8 (the request says
 *    so); under any other encoding only all-ASCII values are handled, where
 *    a byte is a character in every encoding PostgreSQL supports as a server
 *    encoding; anything else is AP_EV_FALLBACK.
 *  - LIKE follows like_match.c's MatchText semantics: bytes compare, `_`
 *    consumes one character, `%` any run, backslash escapes the next byte, a
 *    pattern ending in a backslash is an error (fallback); the ABORT result
 *    cuts the search as PostgreSQL's does.  bpchar LIKE matches the padded
 *    value (bpcharlike is textlike on the stored bytes).
 *  - ILIKE and upper/lower fold ASCII letters, and only all-ASCII values:
 *    any other byte is AP_EV_FALLBACK.  The host ships them under the C
 *    ctype and under collations whose case mapping of the 26 letters it
 *    probed to be ASCII's (shippable.c); for ASCII text both fold as
 *    PostgreSQL does, and only ASCII is decided here.
 *  - Other functions take text: a bpchar argument is first cast to text,
 *    which drops its trailing spaces (octet_length excepted: bpcharoctetlen
 *    counts the padding).
 *  - Results are built in the arena; a result that does not fit falls back.
 */
#define _GNU_SOURCE				/* memmem */
#include <string.h>

#include "vm_internal.h"

#define LIKE_TRUE		1
#define LIKE_FALSE		0
#define LIKE_ABORT		(-1)
#define LIKE_ERROR		(-2)
#define LIKE_MAX_DEPTH	1000

/* True if every byte is ASCII. */
static bool
all_ascii(const unsigned char *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] & 0x80)
			return false;
	return true;
}

/* Byte length of the UTF8 character starting with lead byte c (pg_utf_mblen). */
static inline uint32_t
utf8_len(unsigned char c)
{
	if ((c & 0x80) == 0)
		return 1;
	if ((c & 0xe0) == 0xc0)
		return 2;
	if ((c & 0xf0) == 0xe0)
		return 3;
	if ((c & 0xf8) == 0xf0)
		return 4;
	return 1;
}

/* ASCII-only case folding (the C collation's lower()). */
static inline unsigned char
fold(unsigned char c, bool icase)
{
	return (icase && c >= 'A' && c <= 'Z') ? (unsigned char) (c + 'a' - 'A') : c;
}

/* Advance over one character of s (UTF8: lead byte plus continuation bytes). */
static inline void
next_char(const unsigned char **s, uint32_t *len, bool utf8)
{
	do
	{
		(*s)++;
		(*len)--;
	} while (utf8 && *len > 0 && (**s & 0xC0) == 0x80);
}

/* MatchText(): LIKE_TRUE, LIKE_FALSE, LIKE_ABORT, or LIKE_ERROR. */
static int
match(const unsigned char *t, uint32_t tlen, const unsigned char *p, uint32_t plen,
	  bool icase, bool utf8, int depth)
{
	if (depth > LIKE_MAX_DEPTH)
		return LIKE_ERROR;
	if (plen == 1 && *p == '%')
		return LIKE_TRUE;
	while (tlen > 0 && plen > 0)
	{
		if (*p == '\\')
		{
			/* the next pattern byte matches literally; there must be one */
			p++;
			plen--;
			if (plen == 0)
				return LIKE_ERROR;
			if (fold(*p, icase) != fold(*t, icase))
				return LIKE_FALSE;
		}
		else if (*p == '%')
		{
			unsigned char firstpat;

			/* %'s and _'s after it: N _'s and one % match >= N characters */
			p++;
			plen--;
			while (plen > 0)
			{
				if (*p == '%')
				{
					p++;
					plen--;
				}
				else if (*p == '_')
				{
					if (tlen == 0)
						return LIKE_ABORT;
					next_char(&t, &tlen, utf8);
					p++;
					plen--;
				}
				else
					break;
			}
			if (plen == 0)
				return LIKE_TRUE;
			/* try each text position whose byte matches the next literal */
			if (*p == '\\')
			{
				if (plen < 2)
					return LIKE_ERROR;
				firstpat = fold(p[1], icase);
			}
			else
				firstpat = fold(*p, icase);
			while (tlen > 0)
			{
				if (fold(*t, icase) == firstpat)
				{
					int			m = match(t, tlen, p, plen, icase, utf8, depth + 1);

					if (m != LIKE_FALSE)
						return m;
				}
				next_char(&t, &tlen, utf8);
			}
			return LIKE_ABORT;
		}
		else if (*p == '_')
		{
			next_char(&t, &tlen, utf8);
			p++;
			plen--;
			continue;
		}
		else if (fold(*p, icase) != fold(*t, icase))
			return LIKE_FALSE;
		/* bytes matched: byte steps stay in step inside a character */
		t++;
		tlen--;
		p++;
		plen--;
	}
	if (tlen > 0)
		return LIKE_FALSE;
	while (plen > 0 && *p == '%')
	{
		p++;
		plen--;
	}
	return plen == 0 ? LIKE_TRUE : LIKE_ABORT;
}

/*
 * The common LIKE patterns (TPC-H's '%special%requests%', 'PROMO%',
 * '%BRASS') are literals between %'s: no _, no backslash.  Such a pattern
 * matches iff its literals occur in order without overlapping, the first at
 * the start unless the pattern starts with %, the last at the end unless it
 * ends with %; taking each literal's leftmost occurrence after the previous
 * one is never worse than another choice, so a left-to-right search with
 * memmem decides it.  Bytes suffice under UTF8 too: a literal that is valid
 * UTF8 cannot match starting inside a character, and % counts no
 * characters.  The split of the last pattern seen is kept per thread,
 * with a copy of the pattern that each call compares (a scan's pattern is
 * usually one constant of its request; a pattern column changes it).
 */
#define LIKE_FAST_MAX_LITS	8
#define LIKE_FAST_MAX_BYTES	128

typedef struct LikeFast
{
	unsigned char p[LIKE_FAST_MAX_BYTES];	/* a copy of the pattern described */
	uint32_t	plen;
	bool		ok;				/* literals and %'s only */
	bool		lead;			/* starts with a literal */
	bool		trail;			/* ends with a literal */
	int			nlits;
	uint32_t	off[LIKE_FAST_MAX_LITS];
	uint32_t	len[LIKE_FAST_MAX_LITS];
} LikeFast;

static __thread LikeFast like_fast;

/* Split p into its literals, or say it is not that simple a pattern. */
static void
like_fast_compile(LikeFast *lf, const unsigned char *p, uint32_t plen)
{
	uint32_t	i = 0;

	lf->ok = false;
	lf->nlits = 0;
	lf->plen = 0;
	if (plen == 0 || plen > LIKE_FAST_MAX_BYTES)
		return;
	memcpy(lf->p, p, plen);
	lf->plen = plen;
	lf->lead = p[0] != '%';
	lf->trail = p[plen - 1] != '%';
	while (i < plen)
	{
		uint32_t	start;

		while (i < plen && p[i] == '%')
			i++;
		start = i;
		while (i < plen && p[i] != '%')
		{
			if (p[i] == '_' || p[i] == '\\')
				return;
			i++;
		}
		if (i > start)
		{
			if (lf->nlits == LIKE_FAST_MAX_LITS)
				return;
			lf->off[lf->nlits] = start;
			lf->len[lf->nlits] = i - start;
			lf->nlits++;
		}
	}
	lf->ok = true;
}

/* t LIKE lf's pattern (see above). */
static bool
like_fast_match(const LikeFast *lf, const unsigned char *t, uint32_t tlen)
{
	uint32_t	pos = 0;

	for (int i = 0; i < lf->nlits; i++)
	{
		const unsigned char *lit = lf->p + lf->off[i];
		uint32_t	len = lf->len[i];
		const unsigned char *q;

		if (i == lf->nlits - 1 && lf->trail)
		{
			/* the last literal ends the text, after the ones before it */
			if (i == 0 && lf->lead)
				return tlen == len && memcmp(t, lit, len) == 0;
			return tlen - pos >= len && memcmp(t + tlen - len, lit, len) == 0;
		}
		if (i == 0 && lf->lead)
		{
			if (tlen < len || memcmp(t, lit, len) != 0)
				return false;
			pos = len;
			continue;
		}
		q = memmem(t + pos, tlen - pos, lit, len);
		if (q == NULL)
			return false;
		pos = (uint32_t) (q - t) + len;
	}
	return true;
}

/* s LIKE p by like_match.c's rules alone (the reference of the unit tests). */
ApEv
ap_vm_like_general(const unsigned char *s, uint32_t slen, const unsigned char *p,
				   uint32_t plen, bool icase, bool utf8, bool *matched)
{
	int			m;

	if (!utf8 && (!all_ascii(s, slen) || !all_ascii(p, plen)))
		return AP_EV_FALLBACK;
	m = match(s, slen, p, plen, icase, utf8, 0);
	if (m == LIKE_ERROR)
		return AP_EV_FALLBACK;
	*matched = (m == LIKE_TRUE);
	return AP_EV_VALUE;
}

/* s LIKE p (ILIKE when icase); AP_EV_FALLBACK where PostgreSQL errors. */
ApEv
ap_vm_like(const unsigned char *s, uint32_t slen, const unsigned char *p,
		   uint32_t plen, bool icase, bool utf8, bool *matched)
{
	if (!icase && (utf8 || (all_ascii(s, slen) && all_ascii(p, plen))))
	{
		/* the pattern itself, not its address: memory is reused */
		if (like_fast.plen != plen || plen == 0 || memcmp(like_fast.p, p, plen) != 0)
			like_fast_compile(&like_fast, p, plen);
		if (like_fast.ok)
		{
			*matched = like_fast_match(&like_fast, s, slen);
			return AP_EV_VALUE;
		}
	}
	return ap_vm_like_general(s, slen, p, plen, icase, utf8, matched);
}

/*
 * Does s hold a NUL byte?  Text with one is corrupt, but PostgreSQL still
 * reads it: length(), substring(), upper()/lower() and ILIKE under a
 * multibyte encoding stop at the NUL (pg_mbstrlen_with_len, pnstrdup),
 * single-byte encodings count past it.  The disk hands such values to the
 * host rather than copy each of those rules; byte-wise operations (=, LIKE,
 * ||, octet_length, C-collation order) treat a NUL as any other byte, as
 * PostgreSQL does.
 */
static inline bool
has_nul(const unsigned char *s, uint32_t len)
{
	return len > 0 && memchr(s, 0, len) != NULL;
}

/* A string argument as text: bpchar loses its padding. */
static void
as_text(const ApVal *v, const unsigned char **p, uint32_t *len)
{
	*p = v->u.s.p;
	*len = v->u.s.len;
	if (v->kind == AP_TYPE_BPCHAR)
		while (*len > 0 && (*p)[*len - 1] == ' ')
			(*len)--;
}

/*
 * Character count of s, or -1 when it cannot be counted exactly: an invalid
 * UTF8 tail, or non-ASCII bytes under a non-UTF8 encoding.
 */
static int64_t
char_count(const unsigned char *s, uint32_t len, bool utf8)
{
	int64_t		n = 0;
	uint32_t	i = 0;

	if (!utf8)
		return all_ascii(s, len) ? (int64_t) len : -1;
	while (i < len)
	{
		i += utf8_len(s[i]);
		n++;
	}
	return i == len ? n : -1;
}

/* Byte offset of character number k (0-based) of s; len if past the end. */
static uint32_t
char_offset(const unsigned char *s, uint32_t len, int64_t k, bool utf8)
{
	uint32_t	i = 0;

	if (!utf8)
		return k >= (int64_t) len ? len : (uint32_t) k;
	while (k-- > 0 && i < len)
		i += utf8_len(s[i]);
	return i > len ? len : i;
}

/*
 * substring(s FROM start [FOR count]) by characters: positions from
 * max(start, 1) up to start + count (exclusive); a negative count is an
 * error; start + count overflowing int4 runs to the end, as in PostgreSQL.
 */
static ApEv
substr(const unsigned char *s, uint32_t len, int64_t start, bool has_count,
	   int64_t count, bool utf8, ApVal *out)
{
	int64_t		first = start < 1 ? 1 : start;
	int64_t		end;
	int64_t		nchars = char_count(s, len, utf8);
	uint32_t	b0,
				b1;

	if (has_count && count < 0)
		return AP_EV_FALLBACK;
	if (nchars < 0)
		return AP_EV_FALLBACK;
	end = has_count ? start + count : INT64_MAX;
	out->u.s.p = s;
	out->u.s.len = 0;
	if (end <= first || first > nchars)
		return AP_EV_VALUE;
	b0 = char_offset(s, len, first - 1, utf8);
	b1 = end - 1 > nchars ? len : char_offset(s, len, end - 1, utf8);
	out->u.s.p = s + b0;
	out->u.s.len = b1 - b0;
	return AP_EV_VALUE;
}

/* String functions of ap_types.h (kinds checked at compile). */
ApEv
ap_vm_string(int fn, int nargs, const ApVal *args, ApEvalCtx *cx, ApVal *out)
{
	const unsigned char *s,
			   *p;
	uint32_t	slen,
				plen;

	switch (fn)
	{
		case AP_FN_LIKE:
		case AP_FN_NOT_LIKE:
		case AP_FN_ILIKE:
		case AP_FN_NOT_ILIKE:
			{
				bool		m = false;
				bool		icase = fn == AP_FN_ILIKE || fn == AP_FN_NOT_ILIKE;

				/* the value as stored (bpchar padded); a pattern is text */
				as_text(&args[1], &p, &plen);
				if (icase && (has_nul(args[0].u.s.p, args[0].u.s.len) || has_nul(p, plen) ||
							  !all_ascii(args[0].u.s.p, args[0].u.s.len) || !all_ascii(p, plen)))
					return AP_EV_FALLBACK;
				if (ap_vm_like(args[0].u.s.p, args[0].u.s.len, p, plen, icase, cx->utf8,
							   &m) != AP_EV_VALUE)
					return AP_EV_FALLBACK;
				out->u.i = (fn == AP_FN_LIKE || fn == AP_FN_ILIKE) ? m : !m;
				return AP_EV_VALUE;
			}

		case AP_FN_SUBSTR:
			as_text(&args[0], &s, &slen);
			if (has_nul(s, slen))
				return AP_EV_FALLBACK;
			return substr(s, slen, args[1].u.i, nargs == 3, nargs == 3 ? args[2].u.i : 0,
						  cx->utf8, out);

		case AP_FN_LENGTH:
			{
				int64_t		n;

				as_text(&args[0], &s, &slen);
				if (has_nul(s, slen) || (n = char_count(s, slen, cx->utf8)) < 0)
					return AP_EV_FALLBACK;
				out->u.i = n;
				return AP_EV_VALUE;
			}

		case AP_FN_OCTET_LENGTH:
			out->u.i = args[0].u.s.len;
			return AP_EV_VALUE;

		case AP_FN_UPPER:
		case AP_FN_LOWER:
			{
				unsigned char *r;

				as_text(&args[0], &s, &slen);
				if (has_nul(s, slen) || (r = ap_arena_alloc(cx->arena, slen)) == NULL)
					return AP_EV_FALLBACK;
				for (uint32_t i = 0; i < slen; i++)
				{
					unsigned char c = s[i];

					if (c & 0x80)
						return AP_EV_FALLBACK;
					if (fn == AP_FN_UPPER && c >= 'a' && c <= 'z')
						c = (unsigned char) (c - 'a' + 'A');
					else if (fn == AP_FN_LOWER && c >= 'A' && c <= 'Z')
						c = (unsigned char) (c - 'A' + 'a');
					r[i] = c;
				}
				out->u.s.p = r;
				out->u.s.len = slen;
				return AP_EV_VALUE;
			}

		case AP_FN_TEXTCAT:
			{
				unsigned char *r;

				as_text(&args[0], &s, &slen);
				as_text(&args[1], &p, &plen);
				if ((uint64_t) slen + plen > 0x3FFFFFFFu - 4 ||
					(r = ap_arena_alloc(cx->arena, slen + plen)) == NULL)
					return AP_EV_FALLBACK;
				if (slen > 0)
					memcpy(r, s, slen);
				if (plen > 0)
					memcpy(r + slen, p, plen);
				out->u.s.p = r;
				out->u.s.len = slen + plen;
				return AP_EV_VALUE;
			}

		default:
			return AP_EV_FALLBACK;
	}
}
