/*
 * vm_flat.c
 *	  A flat, typed form of the computed projections for the hot loop of the
 *	  aggregation: straight-line register code over 64-bit values.
 *
 * The tree interpreter (vm_eval.c) decides every case exactly, at the price
 * of a dispatch, a memo probe and a 48-byte ApVal per node.  TPC-H's
 * aggregates are a few numeric columns combined by + - * with constants
 * (Q1's sum(l_extendedprice * (1 - l_discount) * (1 + l_tax))), whose
 * values fit 64 bits by far.  For such programs we also compile this flat
 * form: one instruction per distinct node (shared subexpressions once), a
 * numeric register being a 64-bit coefficient plus its display scale.
 *
 * Rules of this file:
 *  - The flat form is an accelerator, never a second definition: every
 *    value it produces equals what ap_program_eval would produce for the
 *    tuple (PostgreSQL's result scales: max of the scales for + and -, their
 *    sum for *).  Whatever it cannot do at 64 bits (a numeric stored in the
 *    long format or beyond 18 digits, an overflow, a compressed or external
 *    string) makes ap_flat_eval return false, and the caller evaluates the
 *    tuple with the tree interpreter, which decides it exactly.
 *  - Only node kinds listed in flat_node compile; a program with anything
 *    else gets no flat form (ap_flat_compile returns NULL).
 *  - Evaluation runs over a batch of tuples one instruction at a time (a
 *    register holds the batch's values), so the dispatch on the opcode is
 *    paid once per batch, not per tuple: the aggregation evaluates a page's
 *    tuples together (measured on TPC-H Q1 at SF1: disk CPU about 5% lower
 *    than one tuple at a time).  ap_flat_eval is a batch of one, in
 *    registers of its own, so a tuple the aggregation evaluates alone
 *    leaves the batch in progress intact.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "numeric_i64.h"
#include "vm_internal.h"

#define FLAT_MAX_INS		64
#define FLAT_MAX_SCALE		36	/* a product's scale beyond this: tree path */

typedef enum FlatOp
{
	FO_NUMCOL,					/* numeric column -> coefficient, scale */
	FO_INTCOL,					/* fixed-width integer-like column -> i */
	FO_STRCOL,					/* text-like column -> payload pointer */
	FO_CONST,					/* numeric or integer constant */
	FO_ADD,
	FO_SUB,
	FO_MUL,
	FO_ADDK,					/* a + constant (numeric) */
	FO_SUBK,					/* a - constant */
	FO_KSUB						/* constant - a (Q1's 1 - l_discount) */
} FlatOp;

typedef struct FlatIns
{
	uint8_t		op;				/* FlatOp */
	uint8_t		kind;			/* ApTypeKind of the result */
	int16_t		a;				/* argument registers (FO_ADD/SUB/MUL; a: FO_*K) */
	int16_t		b;
	int			attno;			/* FO_*COL */
	int64_t		kcoef;			/* FO_CONST, FO_*K */
	int			kscale;
} FlatIns;

/*
 * A register over a batch: the values of AP_FLAT_BATCH tuples.  Its NULL
 * flags and numeric scales are read through nul and sc: the register's own
 * arrays, or, when the batch has no NULL there (uniform_zero) and every
 * scale is the same (uniform_scale[s]), shared constant arrays.  Columns
 * declared numeric(p,s) NOT NULL, and every + - * of them, are such
 * registers, and their instructions then run without per-tuple NULL and
 * scale work: one scale for the batch, one overflow check per tuple.
 * Tuples marked bad hold nothing of use, and do not count.
 */
typedef struct FlatVec
{
	int64_t		i[AP_FLAT_BATCH];	/* integer value or numeric coefficient */
	const unsigned char *p[AP_FLAT_BATCH];	/* FO_STRCOL payload */
	uint32_t	len[AP_FLAT_BATCH];
	int16_t		scale[AP_FLAT_BATCH];	/* numeric display scale */
	bool		isnull[AP_FLAT_BATCH];
	const int16_t *sc;			/* scale[] or uniform_scale[uscale] */
	const bool *nul;			/* isnull[] or uniform_zero */
	int16_t		uscale;			/* the batch's one scale, or -1 */
	bool		anynull;
} FlatVec;

/* The shared arrays of a register without NULLs, and of one scale. */
static const bool uniform_zero[AP_FLAT_BATCH];
static int16_t uniform_scale[FLAT_MAX_SCALE + 1][AP_FLAT_BATCH];
static pthread_once_t uniform_once = PTHREAD_ONCE_INIT;

static void
uniform_init(void)
{
	for (int sc = 0; sc <= FLAT_MAX_SCALE; sc++)
		for (int r = 0; r < AP_FLAT_BATCH; r++)
			uniform_scale[sc][r] = (int16_t) sc;
}

/* Point d's views at what run_ins found: uniform scale us (or -1), any NULL. */
static inline void
set_views(FlatVec *d, int us, bool anynull)
{
	d->anynull = anynull;
	d->nul = anynull ? d->isnull : uniform_zero;
	d->uscale = (int16_t) (us >= 0 && us <= FLAT_MAX_SCALE ? us : -1);
	d->sc = d->uscale >= 0 ? uniform_scale[d->uscale] : d->scale;
}

/*
 * Decoded numerics by their stored bytes, for the short values of a column
 * (quantities, rates: a few distinct values in many tuples).  Direct mapped;
 * an entry is the value's bytes (at most 8, the header byte included, which
 * gives the length: equal keys are equal bytes) and its decoding.  Only
 * values that decode are kept.
 */
#define FLAT_NUMCACHE_BITS	7
#define FLAT_NUMCACHE		(1 << FLAT_NUMCACHE_BITS)	/* entries per column */

typedef struct FlatNumCacheEntry
{
	uint64_t	key;			/* 0: empty (a stored varlena's header is not 0) */
	int64_t		coef;
	int			scale;
} FlatNumCacheEntry;

/* The registers of a batch. */
typedef struct FlatBatch
{
	FlatVec    *vec;			/* nins registers, allocated at the first use */
	FlatNumCacheEntry *numcache;	/* FLAT_NUMCACHE per instruction, with vec */
	bool		bad[AP_FLAT_BATCH];	/* tuple r needs the tree interpreter */
} FlatBatch;

struct ApFlat
{
	int			nins;			/* instruction i writes register i */
	FlatIns		ins[FLAT_MAX_INS];
	int			nout;
	int16_t		out[FLAT_MAX_INS];	/* register of computed projection j */
	uint8_t		out_kind[FLAT_MAX_INS];
	FlatBatch	batch;			/* ap_flat_eval_batch's */
	FlatBatch	one;			/* ap_flat_eval's: a batch of one */
};

typedef struct FlatCompile
{
	ApFlat	   *f;
	const ApNode *node[FLAT_MAX_INS];	/* node compiled into register i */
	int			memo_reg[FLAT_MAX_INS];	/* memo slot -> register, -1 none */
} FlatCompile;

static bool
int_like(int k)
{
	return AP_IS_INT_KIND(k) || k == AP_TYPE_DATE || k == AP_TYPE_BOOL ||
		k == AP_TYPE_TIMESTAMP || k == AP_TYPE_TIMESTAMPTZ;
}

/* Append an instruction; its register, or -1 when the form is full. */
static int
emit(FlatCompile *fc, const ApNode *n, const FlatIns *in)
{
	ApFlat	   *f = fc->f;

	if (f->nins >= FLAT_MAX_INS)
		return -1;
	f->ins[f->nins] = *in;
	fc->node[f->nins] = n;
	if (n->memo >= 0 && n->memo < FLAT_MAX_INS)
		fc->memo_reg[n->memo] = f->nins;
	return f->nins++;
}

/* A constant node's value as a 64-bit coefficient and scale; false if it has no flat form. */
static bool
flat_const(const ApNode *n, int64_t *kcoef, int *kscale)
{
	*kcoef = 0;
	*kscale = 0;
	if (n->kind != N_CONST || n->konst.isnull || n->kev != AP_EV_VALUE)
		return false;
	if (n->type_kind == AP_TYPE_NUMERIC)
	{
		if (n->kval.nform != AP_NF_FIXED ||
			n->kval.u.fx.coef > INT64_MAX || n->kval.u.fx.coef < -INT64_MAX)
			return false;
		*kcoef = (int64_t) n->kval.u.fx.coef;
		*kscale = n->kval.u.fx.dscale;
		return true;
	}
	if (!int_like(n->type_kind))
		return false;
	*kcoef = n->kval.u.i;
	return true;
}

/* Register holding node n, compiling it (and its arguments) first; -1: no flat form. */
static int
flat_node(FlatCompile *fc, const ApNode *n, int depth)
{
	FlatIns		in = {0};

	if (depth > 32)
		return -1;
	for (int i = 0; i < fc->f->nins; i++)
		if (fc->node[i] == n)
			return i;
	if (n->memo >= 0)
	{
		if (n->memo >= FLAT_MAX_INS)
			return -1;
		if (fc->memo_reg[n->memo] >= 0)
			return fc->memo_reg[n->memo];
	}
	in.kind = n->type_kind;
	switch (n->kind)
	{
		case N_VAR:
			in.attno = n->attno;
			if (n->type_kind == AP_TYPE_NUMERIC)
				in.op = FO_NUMCOL;
			else if (int_like(n->type_kind))
				in.op = FO_INTCOL;
			else if (AP_IS_STR_KIND(n->type_kind))
				in.op = FO_STRCOL;
			else
				return -1;
			return emit(fc, n, &in);

		case N_CONST:
			if (!flat_const(n, &in.kcoef, &in.kscale))
				return -1;
			in.op = FO_CONST;
			return emit(fc, n, &in);

		case N_FUNC:
			{
				int			ra,
							rb;

				/* numeric + - * only: integer arithmetic has its own overflow rules */
				if (n->type_kind != AP_TYPE_NUMERIC || n->nargs != 2 ||
					n->args[0]->type_kind != AP_TYPE_NUMERIC ||
					n->args[1]->type_kind != AP_TYPE_NUMERIC)
					return -1;
				if (n->fn == AP_FN_ADD)
					in.op = FO_ADD;
				else if (n->fn == AP_FN_SUB)
					in.op = FO_SUB;
				else if (n->fn == AP_FN_MUL)
					in.op = FO_MUL;
				else
					return -1;
				/*
				 * A sum or difference with a constant: the constant at the
				 * operand's scale is found once per scale it meets, not per tuple.
				 */
				for (int k = 1; k >= 0 && in.op != FO_MUL; k--)
				{
					const ApNode *x = n->args[1 - k];

					if (x->kind == N_CONST || n->args[k]->kind != N_CONST ||
						!flat_const(n->args[k], &in.kcoef, &in.kscale))
						continue;
					if ((ra = flat_node(fc, x, depth + 1)) < 0)
						return -1;
					in.op = in.op == FO_ADD ? FO_ADDK : k == 1 ? FO_SUBK : FO_KSUB;
					in.a = (int16_t) ra;
					return emit(fc, n, &in);
				}
				if ((ra = flat_node(fc, n->args[0], depth + 1)) < 0 ||
					(rb = flat_node(fc, n->args[1], depth + 1)) < 0)
					return -1;
				in.a = (int16_t) ra;
				in.b = (int16_t) rb;
				return emit(fc, n, &in);
			}

		default:
			return -1;
	}
}

ApFlat *
ap_flat_compile(const ApProgram *prog)
{
	FlatCompile fc;
	ApFlat	   *f;

	if (prog->nexprs <= 0 || prog->nexprs > FLAT_MAX_INS)
		return NULL;
	(void) pthread_once(&uniform_once, uniform_init);
	f = calloc(1, sizeof(ApFlat));
	if (f == NULL)
		return NULL;
	memset(&fc, 0, sizeof(fc));
	fc.f = f;
	for (int i = 0; i < FLAT_MAX_INS; i++)
		fc.memo_reg[i] = -1;
	for (int j = 0; j < prog->nexprs; j++)
	{
		int			r = flat_node(&fc, prog->exprs[j]->root, 0);

		/* the projection's declared kind must be the value's own */
		if (r < 0 || f->ins[r].kind != prog->expr_cols[j].type_kind)
		{
			free(f);
			return NULL;
		}
		f->out[j] = (int16_t) r;
		f->out_kind[j] = prog->expr_cols[j].type_kind;
	}
	f->nout = prog->nexprs;
	return f;
}

void
ap_flat_free(ApFlat *f)
{
	if (f != NULL)
	{
		free(f->batch.vec);
		free(f->batch.numcache);
		free(f->one.vec);
		free(f->one.numcache);
	}
	free(f);
}

/* Align two numeric values to the larger scale; false on overflow. */
static inline bool
align_scales(int64_t x, int16_t xs, int64_t y, int16_t ys, int64_t *cx, int64_t *cy,
			 int16_t *scale)
{
	int			d = xs - ys;

	*cx = x;
	*cy = y;
	*scale = xs;
	if (d == 0)
		return true;
	if (d > 0)
		return d <= 18 && !__builtin_mul_overflow(y, ap_pow10_i64[d], cy);
	*scale = ys;
	return -d <= 18 && !__builtin_mul_overflow(x, ap_pow10_i64[-d], cx);
}

/* Payload of a stored varlena without decompressing; false if it would need to. */
static inline bool
str_payload(const unsigned char *p, const unsigned char **data, uint32_t *len)
{
	/* the short header of every small value on a page (VARATT_IS_1B, not external) */
	if ((p[0] & 0x01) == 0x01 && p[0] != 0x01)
	{
		*data = p + 1;
		*len = ((uint32_t) p[0] >> 1) - 1;
		return true;
	}
	return ap_varlena_payload(p, NULL, 0, data, len) == AP_OK;
}

/*
 * The stored numeric v (not NULL) as a 64-bit coefficient and scale, from
 * the cache when its bytes are there; false where ap_numeric_payload_i64
 * declines.  The 8 bytes ending at the value's last byte are read at once:
 * values lie in a heap page after their tuple's header, so at least 7
 * readable bytes precede any of them (ap_flat_eval's rule).
 */
static inline bool
num_value(FlatNumCacheEntry *cache, const ApValue *v, int64_t *c, int *ds)
{
	const unsigned char *p;
	uint32_t	len;
	uint64_t	key = 0;
	FlatNumCacheEntry *e = NULL;

	if (v->len >= 1 && v->len <= 8)
	{
		uint64_t	w;

		memcpy(&w, v->ptr + v->len - 8, sizeof(w));
		key = w >> (64 - 8 * v->len);
		e = &cache[(key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - FLAT_NUMCACHE_BITS)];
		if (e->key == key)
		{
			*c = e->coef;
			*ds = e->scale;
			return true;
		}
	}
	if (!str_payload(v->ptr, &p, &len) || !ap_numeric_payload_i64(p, len, c, ds))
		return false;
	if (e != NULL)
	{
		e->key = key;
		e->coef = *c;
		e->scale = *ds;
	}
	return true;
}

/*
 * Instruction in over the n tuples of rows, into register d (the batch's
 * registers: in's arguments precede it).  A tuple it cannot do at 64 bits is
 * marked bad; its registers then hold nothing of use.
 */
static inline void
run_ins(FlatBatch *b, const FlatIns *in, int i, const ApValue *const *rows, int n)
{
	FlatVec    *d = &b->vec[i];
	bool	   *bad = b->bad;

	switch ((FlatOp) in->op)
	{
		case FO_NUMCOL:
			{
				bool		anynull = false;
				int			us = -1;
				bool		varies = false;

				for (int r = 0; r < n; r++)
				{
					const ApValue *v = &rows[r][in->attno - 1];
					int64_t		c = 0;
					int			ds = 0;

					/* NULL and bad values read as 0: defined inputs for the arithmetic */
					d->isnull[r] = v->isnull;
					anynull |= v->isnull;
					if (!v->isnull)
					{
						if (num_value(b->numcache + (size_t) i * FLAT_NUMCACHE, v, &c, &ds))
						{
							varies |= us >= 0 && ds != us;
							us = ds;
						}
						else
						{
							bad[r] = true;
							c = 0;
							ds = 0;
						}
					}
					d->i[r] = c;
					d->scale[r] = (int16_t) ds;
				}
				set_views(d, varies ? -1 : us, anynull);
				break;
			}
		case FO_INTCOL:
			{
				bool		anynull = false;

				for (int r = 0; r < n; r++)
				{
					const ApValue *v = &rows[r][in->attno - 1];

					d->isnull[r] = v->isnull;
					anynull |= v->isnull;
					d->i[r] = v->isnull ? 0 : ap_int_datum(in->kind, v->ptr);
				}
				set_views(d, 0, anynull);
				break;
			}
		case FO_STRCOL:
			{
				bool		anynull = false;

				for (int r = 0; r < n; r++)
				{
					const ApValue *v = &rows[r][in->attno - 1];

					d->isnull[r] = v->isnull;
					anynull |= v->isnull;
					if (!v->isnull && !str_payload(v->ptr, &d->p[r], &d->len[r]))
						bad[r] = true;
				}
				set_views(d, 0, anynull);
				break;
			}
		case FO_CONST:
			for (int r = 0; r < n; r++)
			{
				d->i[r] = in->kcoef;
				d->scale[r] = (int16_t) in->kscale;
				d->isnull[r] = false;
			}
			set_views(d, in->kscale, false);
			break;
		case FO_MUL:
			{
				const FlatVec *x = &b->vec[in->a];
				const FlatVec *y = &b->vec[in->b];

				if (!x->anynull && !y->anynull && x->uscale >= 0 && y->uscale >= 0 &&
					x->uscale + y->uscale <= FLAT_MAX_SCALE)
				{
					/* no NULL, one scale: the product's is their sum */
					for (int r = 0; r < n; r++)
						bad[r] |= __builtin_mul_overflow(x->i[r], y->i[r], &d->i[r]);
					set_views(d, x->uscale + y->uscale, false);
					break;
				}
				for (int r = 0; r < n; r++)
				{
					d->isnull[r] = x->nul[r] | y->nul[r];
					d->scale[r] = (int16_t) (x->sc[r] + y->sc[r]);
					if (__builtin_mul_overflow(x->i[r], y->i[r], &d->i[r]) ||
						d->scale[r] > FLAT_MAX_SCALE)
						bad[r] |= !d->isnull[r];
				}
				set_views(d, -1, true);
				break;
			}
		case FO_ADDK:
		case FO_SUBK:
		case FO_KSUB:
			{
				const FlatVec *x = &b->vec[in->a];
				int16_t		ks = (int16_t) in->kscale;
				int16_t		cached_scale = -1;	/* the constant aligned to it: */
				int64_t		cached_k = 0;

				if (!x->anynull && x->uscale >= ks)
				{
					int64_t		k;
					int16_t		dsc;
					int64_t		unused;

					/* no NULL, one scale at or above the constant's: aligned once */
					if (align_scales(0, x->uscale, in->kcoef, ks, &unused, &k, &dsc))
					{
						for (int r = 0; r < n; r++)
						{
							bool		ovf;

							if (in->op == FO_ADDK)
								ovf = __builtin_add_overflow(x->i[r], k, &d->i[r]);
							else if (in->op == FO_SUBK)
								ovf = __builtin_sub_overflow(x->i[r], k, &d->i[r]);
							else
								ovf = __builtin_sub_overflow(k, x->i[r], &d->i[r]);
							bad[r] |= ovf;
						}
						set_views(d, dsc, false);
						break;
					}
				}
				for (int r = 0; r < n; r++)
				{
					int64_t		cx,
								cy;
					bool		ovf;

					d->isnull[r] = x->nul[r];
					if (d->isnull[r])
					{
						d->i[r] = 0;
						d->scale[r] = 0;
						continue;
					}
					if (x->sc[r] == cached_scale)
					{
						/* the usual tuple: the column's scale, at or above the constant's */
						cx = x->i[r];
						cy = cached_k;
						d->scale[r] = cached_scale;
						ovf = false;
					}
					else
					{
						ovf = !align_scales(x->i[r], x->sc[r], in->kcoef, ks,
											&cx, &cy, &d->scale[r]);
						if (!ovf && x->sc[r] >= ks)
						{
							cached_scale = x->sc[r];
							cached_k = cy;
						}
					}
					if (in->op == FO_ADDK)
						ovf |= __builtin_add_overflow(cx, cy, &d->i[r]);
					else if (in->op == FO_SUBK)
						ovf |= __builtin_sub_overflow(cx, cy, &d->i[r]);
					else
						ovf |= __builtin_sub_overflow(cy, cx, &d->i[r]);
					bad[r] |= ovf;
				}
				set_views(d, -1, true);
				break;
			}
		case FO_ADD:
		case FO_SUB:
			{
				const FlatVec *x = &b->vec[in->a];
				const FlatVec *y = &b->vec[in->b];
				bool		add = in->op == FO_ADD;

				if (!x->anynull && !y->anynull && x->uscale >= 0 && x->uscale == y->uscale)
				{
					/* no NULL, both at the same one scale: nothing to align */
					for (int r = 0; r < n; r++)
						bad[r] |= add ? __builtin_add_overflow(x->i[r], y->i[r], &d->i[r]) :
							__builtin_sub_overflow(x->i[r], y->i[r], &d->i[r]);
					set_views(d, x->uscale, false);
					break;
				}
				for (int r = 0; r < n; r++)
				{
					int64_t		cx,
								cy;
					bool		ovf;

					d->isnull[r] = x->nul[r] | y->nul[r];
					if (d->isnull[r])
					{
						d->i[r] = 0;
						d->scale[r] = 0;
						continue;
					}
					ovf = !align_scales(x->i[r], x->sc[r], y->i[r], y->sc[r],
										&cx, &cy, &d->scale[r]);
					ovf |= add ? __builtin_add_overflow(cx, cy, &d->i[r]) :
						__builtin_sub_overflow(cx, cy, &d->i[r]);
					bad[r] |= ovf;
				}
				set_views(d, -1, true);
				break;
			}
	}
}

/* Run the program over rows[0..n) into b; false if out of memory or n too large. */
static bool
run_batch(const ApFlat *f, FlatBatch *b, const ApValue *const *rows, int n)
{
	if (n < 0 || n > AP_FLAT_BATCH)
		return false;
	if (b->vec == NULL)
	{
		b->vec = malloc(sizeof(FlatVec) * (size_t) f->nins);
		b->numcache = calloc((size_t) f->nins * FLAT_NUMCACHE, sizeof(FlatNumCacheEntry));
		if (b->vec == NULL || b->numcache == NULL)
		{
			free(b->vec);
			free(b->numcache);
			b->vec = NULL;
			b->numcache = NULL;
			return false;
		}
	}
	memset(b->bad, 0, sizeof(bool) * (size_t) n);
	for (int i = 0; i < f->nins; i++)
		run_ins(b, &f->ins[i], i, rows, n);
	return true;
}

/* Tuple r's projections from b (see ap_flat_batch_row). */
static bool
batch_row(const ApFlat *f, const FlatBatch *b, int r, ApVal *out, bool *isnull,
		  ApFlatNum *num)
{
	if (b->bad[r])
		return false;
	for (int j = 0; j < f->nout; j++)
	{
		const FlatVec *s = &b->vec[f->out[j]];
		ApVal	   *o = &out[j];

		o->kind = f->out_kind[j];
		isnull[j] = s->nul[r];
		if (s->nul[r])
			continue;
		if (o->kind == AP_TYPE_NUMERIC && num != NULL)
		{
			num[j].coef = s->i[r];
			num[j].dscale = s->sc[r];
		}
		else if (o->kind == AP_TYPE_NUMERIC)
		{
			o->nform = AP_NF_FIXED;
			o->special = 0;
			o->u.fx.coef = (ap_i128) s->i[r];
			o->u.fx.dscale = s->sc[r];
		}
		else if (AP_IS_STR_KIND(o->kind))
		{
			o->u.s.p = s->p[r];
			o->u.s.len = s->len[r];
		}
		else
			o->u.i = s->i[r];
	}
	return true;
}

bool
ap_flat_eval_batch(ApFlat *f, const ApValue *const *rows, int n)
{
	return run_batch(f, &f->batch, rows, n);
}

bool
ap_flat_batch_row(const ApFlat *f, int r, ApVal *out, bool *isnull, ApFlatNum *num)
{
	return batch_row(f, &f->batch, r, out, isnull, num);
}

const bool *
ap_flat_batch_cols(const ApFlat *f, ApFlatCol *cols)
{
	for (int j = 0; j < f->nout; j++)
	{
		const FlatVec *s = &f->batch.vec[f->out[j]];

		cols[j].i = s->i;
		cols[j].scale = s->sc;
		cols[j].isnull = s->nul;
		cols[j].uscale = s->uscale;
		cols[j].anynull = s->anynull;
		cols[j].p = s->p;
		cols[j].len = s->len;
	}
	return f->batch.bad;
}

/* A batch of its own: the tree path of one tuple leaves a batch in progress intact. */
bool
ap_flat_eval(ApFlat *f, const ApValue *values, ApVal *out, bool *isnull, ApFlatNum *num)
{
	return run_batch(f, &f->one, &values, 1) && batch_row(f, &f->one, 0, out, isnull, num);
}
