/*
 * vm_internal.h
 *	  Shared definitions of the expression VM's files (vm_compile.c, vm_eval.c,
 *	  vm_num.c, vm_date.c, vm_str.c) and of its one typed client, the aggregation (agg_*.c).
 *
 * Rules of these files:
 *  - Every value-producing node evaluates to an ApVal: a type kind plus the
 *    value in the form the kind computes in (int64, float, double, exact
 *    fixed-point numeric, text bytes).  Text and numeric values that come
 *    from a datum point into the page or constant; computed ones live in the
 *    program's arena, which is reset per tuple: evaluation never mallocs.
 *  - A value is present (AP_EV_VALUE), SQL NULL (AP_EV_NULL), or cannot be
 *    reproduced exactly (AP_EV_FALLBACK: PostgreSQL would raise an error, or
 *    the disk lacks the precision): the tuple then goes to the host.
 *  - The functions below see non-null arguments whose kinds compile checked.
 */
#ifndef DISKD_VM_INTERNAL_H
#define DISKD_VM_INTERNAL_H

#include <math.h>
#include <string.h>

#include "diskd.h"

typedef enum ApEv
{
	AP_EV_VALUE = 0,
	AP_EV_NULL = 1,
	AP_EV_FALLBACK = 2
} ApEv;

/* Form of a numeric ApVal. */
typedef enum ApNumForm
{
	AP_NF_DATUM = 0,			/* u.s: a stored numeric payload */
	AP_NF_FIXED = 1,			/* u.fx: a finite computed value */
	AP_NF_SPECIAL = 2			/* special: NaN or an infinity */
} ApNumForm;

typedef struct ApVal
{
	uint8_t		kind;			/* ApTypeKind */
	uint8_t		nform;			/* NUMERIC: ApNumForm */
	uint8_t		special;		/* NUMERIC, AP_NF_SPECIAL: ApNumSpecial */
	union
	{
		int64_t		i;			/* BOOL INT2 INT4 INT8 DATE TIMESTAMP TIMESTAMPTZ */
		float		f4;
		double		f8;
		ApFixed		fx;
		struct
		{
			const unsigned char *p;
			uint32_t	len;
		}			s;			/* TEXT VARCHAR BPCHAR bytes; numeric payload */
	}			u;
} ApVal;

/*
 * Per-program bump allocator, reset for every tuple, and the program's memo:
 * values computed once per evaluation (each numeric column decoded once,
 * subexpressions that occur more than once).  A slot holds a value of the
 * current evaluation when its epoch equals the arena's.
 */
typedef struct ApArena
{
	unsigned char *buf;
	uint32_t	cap;
	uint32_t	used;
	uint32_t	epoch;			/* bumped for every filter/projection call */
	int			nmemo;
	uint32_t   *memo_epoch;
	uint8_t    *memo_ev;		/* ApEv of the slot */
	ApVal	   *memo_val;
} ApArena;

/*
 * Bump-allocate n bytes, 8-aligned; NULL when the arena is full (the caller
 * falls back).  Here rather than in vm_eval.c because the value functions
 * (vm_str.c) allocate their results too, and they sit below the evaluator.
 */
static inline void *
ap_arena_alloc(ApArena *a, uint32_t n)
{
	uint32_t	off = (a->used + 7u) & ~7u;

	if (off > a->cap || n > a->cap - off)
		return NULL;
	a->used = off + n;
	return a->buf + off;
}

/* What evaluation of one tuple needs. */
typedef struct ApEvalCtx
{
	const ApValue *values;
	ApArena    *arena;
	bool		utf8;			/* server encoding is UTF8 */
} ApEvalCtx;


/* Date/timestamp facts (datatype/timestamp.h). */
#define AP_USECS_PER_DAY		INT64_C(86400000000)
#define AP_USECS_PER_HOUR		INT64_C(3600000000)
#define AP_USECS_PER_MINUTE		INT64_C(60000000)
#define AP_USECS_PER_SEC		INT64_C(1000000)
#define AP_POSTGRES_EPOCH_JDATE	2451545
#define AP_DATE_NOBEGIN			INT32_MIN
#define AP_DATE_NOEND			INT32_MAX
#define AP_TS_NOBEGIN			INT64_MIN
#define AP_TS_NOEND				INT64_MAX
/* valid dates: Julian day 0 .. DATE_END_JULIAN (5874898-01-01) exclusive */
#define AP_DATE_MIN_DAYS		(-AP_POSTGRES_EPOCH_JDATE)
#define AP_DATE_END_DAYS		(2147483494 - AP_POSTGRES_EPOCH_JDATE)
/* valid timestamps: Julian day 0 .. 294277-01-01 exclusive */
#define AP_TS_MIN				INT64_C(-211813488000000000)
#define AP_TS_END				INT64_C(9223371331200000000)
#define AP_TS_END_DAYS			106751983	/* TIMESTAMP_END_JULIAN - epoch */

/* ---- compiled programs: shared by vm_compile.c (compile) and vm_eval.c (evaluate) ---- */

#define AP_MAX_FUNC_ARGS		3

typedef enum ApNodeKind
{
	N_VAR,
	N_CONST,
	N_OP,
	N_AND,
	N_OR,
	N_NOT,
	N_NULLTEST,
	N_BOOLTEST,
	N_FUNC,
	N_CASE,
	N_COALESCE
} ApNodeKind;

/*
 * Comparisons of a column with a non-null constant, specialised at compile
 * time so the hot filter path skips the generic value machinery.
 */
typedef enum ApFastCmp
{
	FC_NONE = 0,
	FC_INT,						/* int/date/timestamp/bool column vs integer constant */
	FC_DATE_TS,					/* date column vs timestamp constant */
	FC_FLOAT,					/* float column vs float constant */
	FC_NUMERIC,					/* numeric column vs finite fixed-point constant */
	FC_STR,						/* text-like column vs string constant (bpchar: fbpchar) */
	FC_INT_COLS					/* two integer-like columns (fvar, fvar2) */
} ApFastCmp;

/* One node of a compiled expression. */
typedef struct ApNode
{
	ApNodeKind	kind;
	uint8_t		type_kind;		/* result kind; BOOL for logic nodes */
	uint8_t		op;				/* N_OP: ApOp */
	uint8_t		cmp;			/* N_OP: ApCmp */
	uint8_t		test;			/* N_BOOLTEST: ApBoolTest */
	uint8_t		fn;				/* N_FUNC: ApFunc */
	uint8_t		field;			/* N_FUNC: ApDateField */
	bool		is_not_null;	/* N_NULLTEST */
	bool		has_default;	/* N_CASE: last arg is the ELSE result */
	int32_t		typmod;			/* N_FUNC: result_typmod */
	int			attno;			/* N_VAR */
	int			memo;			/* memo slot (ApArena) or -1 */
	ApValue		konst;			/* N_CONST: points into its own copy */
	ApVal		kval;			/* N_CONST: its value, decoded once at compile */
	uint8_t		kev;			/* N_CONST: ApEv of kval */
	uint8_t		fast;			/* N_OP: ApFastCmp, Var vs Const specialisation */
	uint8_t		fmask;			/* N_OP fast: result bits for c < 0, = 0, > 0 */
	int64_t		fconst;			/* N_OP fast integer-like: the constant, converted */
	const struct ApNode *fvar;	/* N_OP fast: the Var argument */
	const struct ApNode *fvar2; /* N_OP FC_INT_COLS: the second Var */
	bool		fnum64;			/* N_OP FC_NUMERIC: fconst holds the constant's coefficient */
	bool		fbpchar;		/* N_OP FC_STR: bpchar semantics (fconst: trimmed length) */
	const struct ApNode *fkonst;	/* N_OP fast: the Const argument */
	int			nargs;			/* N_CASE: cond, result pairs [+ default] */
	uint32_t	hash;			/* structural hash (common subexpressions) */
	struct ApNode **args;
	/*
	 * N_OR of x = const ... or N_AND of x <> const ... (an IN list, NOT IN):
	 * the constants' values sorted by set_cmp (ap_vm_value_sets); x is
	 * args[0]->args[0].  NULL: evaluate the arguments one by one.
	 */
	ApVal	   *set;
	int			nset;
	uint8_t		set_cmp;
} ApNode;

/* Byte-wise compare, shorter first on a common prefix (C collation). */
static inline int
cmp_bytes(const unsigned char *a, uint32_t alen, const unsigned char *b, uint32_t blen)
{
	int			c = alen == 0 || blen == 0 ? 0 : memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c < 0 ? -1 : 1;
	return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/* bpchar's significant length: trailing spaces are padding. */
static inline uint32_t
bpchar_len(const unsigned char *p, uint32_t len)
{
	while (len > 0 && p[len - 1] == ' ')
		len--;
	return len;
}

/*
 * Three-way comparison of two non-null values of a comparison family that
 * never falls back (integer-like, text, bpchar), as eval_op compares them:
 * a total order whose equality is the operator's, so sorted sets can be
 * searched with it.
 */
static inline bool
ap_vm_set_family(int cmp)
{
	return cmp == AP_CMP_INT || cmp == AP_CMP_DATE || cmp == AP_CMP_TS ||
		cmp == AP_CMP_BOOL || cmp == AP_CMP_TEXT || cmp == AP_CMP_BPCHAR;
}

static inline int
ap_vm_cmp_set_member(int cmp, const ApVal *a, const ApVal *b)
{
	if (cmp == AP_CMP_TEXT)
		return cmp_bytes(a->u.s.p, a->u.s.len, b->u.s.p, b->u.s.len);
	if (cmp == AP_CMP_BPCHAR)
		return cmp_bytes(a->u.s.p, bpchar_len(a->u.s.p, a->u.s.len),
						 b->u.s.p, bpchar_len(b->u.s.p, b->u.s.len));
	return a->u.i < b->u.i ? -1 : (a->u.i > b->u.i ? 1 : 0);
}

/* float8_cmp_internal(): NaN equals NaN and sorts above every number. */
static inline int
ap_vm_cmp_double(double a, double b)
{
	if (isnan(a))
		return isnan(b) ? 0 : 1;
	if (isnan(b))
		return -1;
	return a < b ? -1 : (a > b ? 1 : 0);
}

/* The opaque compiled expression. */
struct ApExpr
{
	ApNode	   *root;
};

/*
 * A numeric payload in the form arithmetic and comparisons use: fixed point
 * when exact, NaN/infinity as special; a value beyond 38 digits (or corrupt)
 * stays a datum, so every later use decides exactly as before.
 */
static inline void
numeric_settle(ApVal *v)
{
	ApFixed		fx;
	ApNumSpecial sp;

	if (ap_numeric_payload_fixed(v->u.s.p, v->u.s.len, &fx, &sp) != AP_OK)
		return;
	if (sp == AP_NUM_FINITE)
	{
		v->nform = AP_NF_FIXED;
		v->u.fx = fx;
	}
	else
	{
		v->nform = AP_NF_SPECIAL;
		v->special = (uint8_t) sp;
	}
}

/* vm_eval.c */
/*
 * The computed projections of one tuple as typed values, for the aggregation, which
 * aggregates them without a round trip through datums: out[i] has the kind
 * of expr_cols[i] and isnull[i] says SQL NULL.  Text and numeric payloads
 * point into the page, a constant or the arena (valid until the next call).
 * AP_FALLBACK as ap_program_project.
 */
ApStatus	ap_program_eval(const ApProgram *prog, const ApValue *values, ApVal *out,
							bool *isnull);

/*
 * vm_flat.c: the computed projections as straight-line 64-bit code, for
 * programs of columns, constants and numeric + - * (see the file).  NULL
 * when the program has anything else.  The values must lie in a heap page
 * (at least 7 readable bytes before each: the tuple header; the numeric
 * decoding reads 8 bytes ending at a short value's end).  ap_flat_eval fills out/isnull as
 * ap_program_eval would and returns true, or returns false: evaluate this
 * tuple with ap_program_eval.  With num, numeric results go to num[j]
 * instead of out[j] (64-bit: no 128-bit value to build and read back).
 */
typedef struct ApFlat ApFlat;
typedef struct ApFlatNum
{
	int64_t		coef;
	int			dscale;
} ApFlatNum;
ApFlat	   *ap_flat_compile(const ApProgram *prog);
void		ap_flat_free(ApFlat *f);
bool		ap_flat_eval(ApFlat *f, const ApValue *values, ApVal *out, bool *isnull,
						 ApFlatNum *num);

/*
 * The same over a batch of tuples, one instruction at a time across the
 * batch (no dispatch per tuple): ap_flat_eval_batch evaluates rows[0..n),
 * n <= AP_FLAT_BATCH, into f's registers (false: out of memory, or n too
 * large); ap_flat_batch_row then gives tuple r's projections exactly as
 * ap_flat_eval would, or false where it would.  Valid until the next batch.
 * A batch is at most a page's tuples (TPC-H's lineitem has about 60 to a
 * page): 64 measured 2-3% less disk CPU on Q1 than 32, 16 far more.
 */
#define AP_FLAT_BATCH		64
bool		ap_flat_eval_batch(ApFlat *f, const ApValue *const *rows, int n);
bool		ap_flat_batch_row(const ApFlat *f, int r, ApVal *out, bool *isnull,
							  ApFlatNum *num);

/*
 * The same batch's projections as columns, for a caller that reads a few of
 * them per tuple (the aggregation's batch path): cols[j] for projection j
 * (its kind decides which arrays mean something: i and scale for a numeric,
 * i for an integer-like value, p and len for a string), and the returned
 * array says which tuples ap_flat_batch_row would decline.  Valid until the
 * next batch.
 */
typedef struct ApFlatCol
{
	const int64_t *i;			/* integer value or numeric coefficient */
	const int16_t *scale;		/* numeric display scale */
	const bool *isnull;
	const unsigned char *const *p;	/* string payload */
	const uint32_t *len;
	int16_t		uscale;			/* every good tuple's scale, or -1: see scale[] */
	bool		anynull;		/* false: isnull[] is all false */
} ApFlatCol;
const bool *ap_flat_batch_cols(const ApFlat *f, ApFlatCol *cols);

/* vm_num.c: int/float/numeric arithmetic, casts, numeric comparison */
ApEv		ap_vm_arith(int fn, int rkind, const ApVal *a, const ApVal *b, ApVal *out);
ApEv		ap_vm_neg(int rkind, const ApVal *a, ApVal *out);
ApEv		ap_vm_cast(int rkind, const ApVal *a, ApVal *out);
ApEv		ap_vm_numeric_typmod(int32_t typmod, const ApVal *a, ApVal *out);
/* numeric_cmp() of two numeric values of any form; AP_EV_FALLBACK if corrupt */
ApEv		ap_vm_numeric_cmp(const ApVal *a, const ApVal *b, int *c);
/* Is CAST from kind `from` to kind `to` one the VM computes? (compile check) */
bool		ap_vm_cast_ok(int from, int to);

/* vm_date.c */
ApEv		ap_vm_date_arith(int fn, int rkind, const ApVal *a, const ApVal *b, ApVal *out);
ApEv		ap_vm_extract(int field, int rkind, const ApVal *a, ApVal *out);
ApEv		ap_vm_date_trunc(int field, const ApVal *a, ApVal *out);
bool		ap_vm_date_to_ts(int32_t days, int64_t *ts);
bool		ap_vm_ts_to_date(int64_t ts, int32_t *days);

/* vm_str.c */
ApEv		ap_vm_string(int fn, int nargs, const ApVal *args, ApEvalCtx *cx, ApVal *out);
ApEv		ap_vm_like(const unsigned char *s, uint32_t slen, const unsigned char *p,
					   uint32_t plen, bool icase, bool utf8, bool *match);
ApEv		ap_vm_like_general(const unsigned char *s, uint32_t slen, const unsigned char *p,
					   uint32_t plen, bool icase, bool utf8, bool *match);

/* ---------- vm_opt.c: compile-time passes ---------- */

/* Mark a comparison of a column with a constant (or two columns) for eval_fast. */
void		ap_vm_specialise_op(ApNode *n);
/* Fill prog->ranges from the filter's leading range comparisons. */
void		ap_vm_range_checks(ApProgram *prog);

/*
 * Give function calls that occur more than once in prog (funcs: every
 * N_FUNC node) one shared memo slot; returns the memo slots now assigned,
 * starting from nmemo.
 */
int			ap_vm_share_subexpressions(const ApProgram *prog, ApNode **funcs, int nfuncs,
									   int nmemo);
/* Turn IN / NOT IN chains of comparisons into sorted sets (ApNode.set). */
void		ap_vm_value_sets(ApProgram *prog);

#endif							/* DISKD_VM_INTERNAL_H */
