/*
 * agg.c
 *	  Partial aggregation at the disk: a hash table of groups bounded by the
 *	  request's memory budget, flushed to the host as AggPartial frames.
 *
 * Rules of this file:
 *  - Keys and aggregate arguments are evaluated by the VM (ap_program_eval
 *    over a program whose computed projections are the keys, then each
 *    AggSpec's argument and FILTER), so they are exactly the expressions the
 *    host would evaluate, with the same fallback rules.  They arrive typed
 *    (ApVal): computed numerics are summed as fixed point, never encoded
 *    into datums and decoded again.
 *  - A tuple is aggregated all or nothing: every value is checked and every
 *    new state computed before any group changes.  Whatever cannot be done
 *    exactly (a numeric beyond the 128-bit fixed range, NaN or infinity in a
 *    numeric sum, a float sum that overflows where PostgreSQL would raise an
 *    error, a value the VM cannot compute, a group that does not fit an empty
 *    table) hands the tuple back (AP_FALLBACK); the host aggregates it into
 *    the same result.
 *  - Groups are keyed by the exact bytes of their key datums.  That is at
 *    least as fine as PostgreSQL's equality (1.5 and 1.50, 'a ' and 'a' stay
 *    apart), never coarser; the host merges with the real equality.
 *  - Memory: groups, their variable-length states and the index all come out
 *    of one budget.  A tuple that needs more than is left makes the caller
 *    flush every group (memory_flush) and retry it on the empty table.
 *  - States travel in the proto/ap_rows.h layout (keys, then one state per
 *    AggSpec, AP_AGG_STATE_KIND), encoded by rowenc.c.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "vm_internal.h"

#define AGG_INDEX_INITIAL		1024	/* slots; power of two */
#define AGG_MIN_BUDGET			(16u * 1024u)
#define AGG_ALIGN(n)			(((n) + 15) & ~((size_t) 15))

/* One AggSpec, compiled. */
typedef struct AggSpec
{
	uint8_t		fn;				/* ApAggFn */
	uint8_t		arg_kind;		/* ApTypeKind the disk accumulates */
	uint8_t		state_kind;		/* AP_AGG_STATE_KIND */
	bool		widen;			/* float4 argument summed as float8 */
	int			arg;			/* index into the evaluated values, -1: none */
	int			filter;			/* index into the evaluated values, -1: none */
} AggSpec;

/* One state of one group. */
typedef struct AggState
{
	bool		has;			/* saw at least one input (else the state is NULL) */
	union
	{
		int64_t		i;			/* count; int/date/timestamp min/max */
		double		f8;
		float		f4;
		bool		b;
		ApFixed		fx;			/* numeric sum */
		struct
		{
			unsigned char *datum;	/* min/max of varlena kinds: 4-byte-header datum */
			uint32_t	len;
			uint32_t	cap;
		}			v;
	}			u;
} AggState;

/* A group: header, states, then the serialized key. */
typedef struct AggGroup
{
	uint64_t	hash;
	uint32_t	keylen;
	AggState	states[];		/* nspecs, then keylen key bytes */
} AggGroup;

/* New state of one spec for the current tuple (computed before commit). */
typedef struct AggNext
{
	bool		touch;			/* the spec takes this tuple */
	AggState	st;
	const unsigned char *vdatum;	/* varlena min/max: the new winner */
	uint32_t	vlen;
	unsigned char nbuf[AP_NUMERIC_FIXED_MAX_BYTES];	/* a computed numeric winner */
} AggNext;

struct ApAgg
{
	ApProgram	prog;			/* computed projections: keys, args, filters */
	bool		prog_ok;
	int			nkeys;
	int			nspecs;
	uint8_t    *key_kinds;
	AggSpec    *specs;
	ApColumn   *out_cols;		/* layout of a partial row */
	int		   *out_project;	/* 1..natts */
	ApValue    *out_values;

	ApVal	   *evals;			/* this tuple's values */
	bool	   *enull;			/* and which of them are NULL */
	unsigned char *keybuf;		/* this tuple's serialized key */
	size_t		keycap;
	AggNext    *next;

	/* the table */
	size_t		budget;
	unsigned char *arena;
	size_t		arena_cap;
	size_t		arena_used;
	AggGroup  **index;
	uint32_t	index_cap;
	uint32_t	ngroups;
	size_t		group_bytes;	/* header + states */

	ap_u128		fixed_bound;	/* 10^38: the range of an ApFixed coefficient */

	uint64_t	groups_shipped;
	uint64_t	flushes;
};

/* Record an error for the caller; returns code. */
static int
agg_error(char *err, size_t errlen, int code, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* Is kind stored as a varlena? */
static bool
kind_varlena(int k)
{
	return AP_KIND_ATTLEN(k) < 0;
}

/* Bytes of memory the table uses now. */
static size_t
agg_used(const ApAgg *a)
{
	return a->arena_used + (size_t) a->index_cap * sizeof(AggGroup *);
}

/* Check one AggSpec against the kind its argument evaluates to. */
static int
check_spec(const ActivePg__AggSpec *m, int expr_kind, AggSpec *sp, char *err, size_t errlen)
{
	int			k = (int) m->arg_kind;
	bool		is_int = (k == AP_TYPE_INT2 || k == AP_TYPE_INT4 || k == AP_TYPE_INT8);

	sp->fn = (uint8_t) m->fn;
	sp->arg_kind = (uint8_t) k;
	sp->widen = false;
	switch (m->fn)
	{
		case AP_AGG_COUNT_STAR:
			sp->state_kind = AP_TYPE_INT8;
			return 0;
		case AP_AGG_COUNT:
			sp->state_kind = AP_TYPE_INT8;
			return 0;
		case AP_AGG_SUM:
			if (!(is_int || k == AP_TYPE_NUMERIC || k == AP_TYPE_FLOAT4 || k == AP_TYPE_FLOAT8))
				return agg_error(err, errlen, AP_ERR_UNSUPPORTED, "sum of type kind %d", k);
			/* a float4 argument summed as float8: float4_accum's rule for avg */
			if (k == AP_TYPE_FLOAT8 && expr_kind == AP_TYPE_FLOAT4)
				sp->widen = true;
			else if (is_int ? !(expr_kind == AP_TYPE_INT2 || expr_kind == AP_TYPE_INT4 ||
								expr_kind == AP_TYPE_INT8) : expr_kind != k)
				return agg_error(err, errlen, AP_ERR_BAD_REQUEST,
								 "sum argument has kind %d, arg_kind says %d", expr_kind, k);
			break;
		case AP_AGG_MIN:
		case AP_AGG_MAX:
			if (k == AP_TYPE_OTHER || k == AP_TYPE_BOOL || k >= AP_TYPE_KIND_COUNT)
				return agg_error(err, errlen, AP_ERR_UNSUPPORTED, "min/max of type kind %d", k);
			if (expr_kind != k &&
				!((k == AP_TYPE_TEXT || k == AP_TYPE_VARCHAR) &&
				  (expr_kind == AP_TYPE_TEXT || expr_kind == AP_TYPE_VARCHAR)))
				return agg_error(err, errlen, AP_ERR_BAD_REQUEST,
								 "min/max argument has kind %d, arg_kind says %d", expr_kind, k);
			break;
		case AP_AGG_BOOL_AND:
		case AP_AGG_BOOL_OR:
			if (k != AP_TYPE_BOOL || expr_kind != AP_TYPE_BOOL)
				return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "bool_and/bool_or needs bool");
			break;
		default:
			return agg_error(err, errlen, AP_ERR_UNSUPPORTED, "unknown aggregate %u", m->fn);
	}
	sp->state_kind = (uint8_t) AP_AGG_STATE_KIND(m->fn, k);
	return 0;
}

/* Two expressions with the same encoding (sum(x) and count(x) of avg(x)). */
static bool
same_expr(const ActivePg__Expr *x, const ActivePg__Expr *y)
{
	size_t		nx = active_pg__expr__get_packed_size(x);
	size_t		ny = active_pg__expr__get_packed_size(y);
	uint8_t    *bx;
	uint8_t    *by;
	bool		same = false;

	if (nx != ny)
		return false;
	bx = malloc(nx + 1);
	by = malloc(ny + 1);
	if (bx != NULL && by != NULL)
	{
		active_pg__expr__pack(x, bx);
		active_pg__expr__pack(y, by);
		same = memcmp(bx, by, nx) == 0;
	}
	free(bx);
	free(by);
	return same;
}

/*
 * Index of e among the argument expressions (after the nkeys keys), added
 * if new: every distinct argument is evaluated once per tuple.
 */
static int
add_expr(ActivePg__Expr **exprs, size_t *nexprs, int nkeys, ActivePg__Expr *e)
{
	for (size_t i = (size_t) nkeys; i < *nexprs; i++)
	{
		if (same_expr(exprs[i], e))
			return (int) i;
	}
	exprs[*nexprs] = e;
	return (int) (*nexprs)++;
}

/*
 * Compile the aggregation of a request: keys, arguments and filters become
 * the computed projections of one VM program.  0 or an ApErrCode with err set.
 */
int
ap_agg_compile(const ActivePg__AggProgram *msg, const ApTupleDesc *desc, bool encoding_utf8,
			   uint64_t budget, ApAgg **out, char *err, size_t errlen)
{
	ActivePg__Program pm = ACTIVE_PG__PROGRAM__INIT;
	ActivePg__Expr **exprs;
	ApAgg	   *a;
	size_t		nexprs = 0;
	int			natts;
	int			rc;

	*out = NULL;
	if (msg->n_group_keys != msg->n_key_kinds)
		return agg_error(err, errlen, AP_ERR_BAD_REQUEST,
						 "agg: %zu group keys with %zu kinds", msg->n_group_keys, msg->n_key_kinds);
	if (msg->n_group_keys + msg->n_aggs > AP_MAX_COLUMNS)
		return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "agg: too many keys and aggregates");
	a = calloc(1, sizeof(ApAgg));
	exprs = calloc(msg->n_group_keys + 2 * msg->n_aggs + 1, sizeof(ActivePg__Expr *));
	if (a == NULL || exprs == NULL)
	{
		free(a);
		free(exprs);
		return agg_error(err, errlen, AP_ERR_OUT_OF_MEMORY, "out of memory");
	}
	*out = a;
	a->nkeys = (int) msg->n_group_keys;
	a->nspecs = (int) msg->n_aggs;
	a->key_kinds = calloc(a->nkeys + 1, 1);
	a->specs = calloc(a->nspecs + 1, sizeof(AggSpec));
	a->next = calloc(a->nspecs + 1, sizeof(AggNext));
	natts = a->nkeys + a->nspecs;
	a->out_cols = calloc(natts + 1, sizeof(ApColumn));
	a->out_project = calloc(natts + 1, sizeof(int));
	a->out_values = calloc(natts + 1, sizeof(ApValue));
	if (a->key_kinds == NULL || a->specs == NULL || a->next == NULL ||
		a->out_cols == NULL || a->out_project == NULL || a->out_values == NULL)
	{
		free(exprs);
		return agg_error(err, errlen, AP_ERR_OUT_OF_MEMORY, "out of memory");
	}

	for (int i = 0; i < a->nkeys; i++)
	{
		if (msg->key_kinds[i] == AP_TYPE_OTHER || msg->key_kinds[i] >= AP_TYPE_KIND_COUNT)
		{
			free(exprs);
			return agg_error(err, errlen, AP_ERR_UNSUPPORTED, "agg: key %d has kind %u",
							 i, msg->key_kinds[i]);
		}
		a->key_kinds[i] = (uint8_t) msg->key_kinds[i];
		exprs[nexprs++] = msg->group_keys[i];
	}
	for (int j = 0; j < a->nspecs; j++)
	{
		const ActivePg__AggSpec *m = msg->aggs[j];

		if (m == NULL)
		{
			free(exprs);
			return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "agg: aggs[%d] missing", j);
		}
		a->specs[j].arg = -1;
		a->specs[j].filter = -1;
		if (m->fn != AP_AGG_COUNT_STAR)
		{
			if (m->arg == NULL)
			{
				free(exprs);
				return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "agg: aggs[%d].arg missing", j);
			}
			a->specs[j].arg = add_expr(exprs, &nexprs, a->nkeys, m->arg);
		}
		if (m->filter != NULL)
			a->specs[j].filter = add_expr(exprs, &nexprs, a->nkeys, m->filter);
		if (a->specs[j].arg < 0 && m->fn != AP_AGG_COUNT_STAR)
		{
			free(exprs);
			return agg_error(err, errlen, AP_ERR_OUT_OF_MEMORY, "out of memory");
		}
	}

	pm.n_project_exprs = nexprs;
	pm.project_exprs = exprs;
	rc = ap_program_compile(&pm, desc, &a->prog);
	free(exprs);
	if (rc != 0)
	{
		agg_error(err, errlen, rc, "agg: %s", a->prog.error);
		ap_program_free(&a->prog);
		return rc;
	}
	a->prog_ok = true;
	a->prog.encoding_utf8 = encoding_utf8;

	/* each value must have the kind the message says */
	for (int i = 0; i < a->nkeys; i++)
	{
		int			k = a->prog.expr_cols[i].type_kind;

		if (k != a->key_kinds[i] &&
			!((k == AP_TYPE_TEXT || k == AP_TYPE_VARCHAR) &&
			  (a->key_kinds[i] == AP_TYPE_TEXT || a->key_kinds[i] == AP_TYPE_VARCHAR)))
			return agg_error(err, errlen, AP_ERR_BAD_REQUEST,
							 "agg: key %d evaluates to kind %d, key_kinds says %d",
							 i, k, a->key_kinds[i]);
	}
	for (int j = 0; j < a->nspecs; j++)
	{
		AggSpec    *sp = &a->specs[j];
		int			ek = sp->arg >= 0 ? a->prog.expr_cols[sp->arg].type_kind : AP_TYPE_OTHER;

		rc = check_spec(msg->aggs[j], ek, sp, err, errlen);
		if (rc != 0)
			return rc;
		if (sp->filter >= 0 && a->prog.expr_cols[sp->filter].type_kind != AP_TYPE_BOOL)
			return agg_error(err, errlen, AP_ERR_BAD_REQUEST, "agg: aggs[%d].filter is not boolean", j);
	}

	/* the partial row: keys, then states */
	for (int i = 0; i < natts; i++)
	{
		int			k = i < a->nkeys ? a->key_kinds[i] : a->specs[i - a->nkeys].state_kind;

		a->out_cols[i].attlen = (int16_t) AP_KIND_ATTLEN(k);
		a->out_cols[i].attalign = (char) AP_KIND_ALIGN(k);
		a->out_cols[i].attbyval = AP_KIND_ATTLEN(k) > 0;
		a->out_cols[i].type_kind = (uint8_t) k;
		a->out_project[i] = i + 1;
	}

	a->evals = calloc(nexprs + 1, sizeof(ApVal));
	a->enull = calloc(nexprs + 1, sizeof(bool));
	a->keycap = 256;
	a->keybuf = malloc(a->keycap);
	a->group_bytes = AGG_ALIGN(sizeof(AggGroup) + sizeof(AggState) * a->nspecs);
	a->fixed_bound = 1;
	for (int i = 0; i < 38; i++)
		a->fixed_bound *= 10;
	a->budget = budget < AGG_MIN_BUDGET ? AGG_MIN_BUDGET : (size_t) budget;
	a->index_cap = AGG_INDEX_INITIAL;
	a->index = calloc(a->index_cap, sizeof(AggGroup *));
	/* untouched pages of the arena cost nothing */
	a->arena_cap = a->budget;
	a->arena = malloc(a->arena_cap);
	if (a->evals == NULL || a->enull == NULL || a->keybuf == NULL || a->index == NULL ||
		a->arena == NULL)
		return agg_error(err, errlen, AP_ERR_OUT_OF_MEMORY, "out of memory for the aggregation");
	return 0;
}

/* Release everything; safe on a partially compiled aggregation. */
void
ap_agg_free(ApAgg *a)
{
	if (a == NULL)
		return;
	if (a->prog_ok)
		ap_program_free(&a->prog);
	free(a->key_kinds);
	free(a->specs);
	free(a->next);
	free(a->out_cols);
	free(a->out_project);
	free(a->out_values);
	free(a->evals);
	free(a->enull);
	free(a->keybuf);
	free(a->index);
	free(a->arena);
	free(a);
}

/* Highest attribute the keys and arguments read. */
int
ap_agg_max_attno(const ApAgg *a)
{
	return a->prog.max_attno;
}

/* Statistics for Done. */
void
ap_agg_stats(const ApAgg *a, uint64_t *groups_shipped, uint64_t *flushes)
{
	*groups_shipped = a->groups_shipped;
	*flushes = a->flushes;
}

/*
 * Hash of the serialized key, eight bytes at a time (keys are short: Q1's
 * two char(1) keys are 12 bytes), with a final avalanche because the index
 * uses the low bits.
 */
static uint64_t
hash_bytes(const unsigned char *p, size_t n)
{
	uint64_t	h = UINT64_C(0x9E3779B97F4A7C15) ^ n;
	uint64_t	w;

	for (; n >= 8; p += 8, n -= 8)
	{
		memcpy(&w, p, 8);
		h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
		h ^= h >> 32;
	}
	if (n > 0)
	{
		w = 0;
		for (size_t i = 0; i < n; i++)
			w |= (uint64_t) p[i] << (8 * i);
		h = (h ^ w) * UINT64_C(0xc4ceb9fe1a85ec53);
	}
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 29;
	return h;
}

/*
 * Payload bytes of a varlena-kind value: text bytes, or a numeric's stored
 * payload (a computed numeric is encoded into buf, as store_datum would).
 */
static void
val_payload(const ApVal *v, unsigned char *buf, const unsigned char **data, uint32_t *len)
{
	if (v->kind == AP_TYPE_NUMERIC && v->nform != AP_NF_DATUM)
	{
		*len = v->nform == AP_NF_FIXED ? ap_numeric_encode_fixed(&v->u.fx, buf) :
			ap_numeric_encode_special((ApNumSpecial) v->special, buf);
		*data = buf;
		return;
	}
	*data = v->u.s.p;
	*len = v->u.s.len;
}

/* Write a fixed-length value of kind k as its datum bytes; returns the length. */
static uint32_t
put_fixed(int k, const ApVal *v, unsigned char *p)
{
	switch (k)
	{
		case AP_TYPE_BOOL:
			p[0] = v->u.i != 0;
			return 1;
		case AP_TYPE_INT2:
			{
				int16_t		x = (int16_t) v->u.i;

				memcpy(p, &x, 2);
				return 2;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		x = (int32_t) v->u.i;

				memcpy(p, &x, 4);
				return 4;
			}
		case AP_TYPE_FLOAT4:
			memcpy(p, &v->u.f4, 4);
			return 4;
		case AP_TYPE_FLOAT8:
			memcpy(p, &v->u.f8, 8);
			return 8;
		default:
			memcpy(p, &v->u.i, 8);
			return 8;
	}
}

/*
 * Serialize this tuple's keys into keybuf: per key a null byte, then the
 * fixed bytes or a 4-byte-header varlena.  Returns the length, or 0 with
 * AP_FALLBACK in *st.
 */
static size_t
serialize_key(ApAgg *a, ApStatus *st)
{
	unsigned char nbuf[AP_NUMERIC_FIXED_MAX_BYTES];
	size_t		need = 0;
	size_t		off = 0;

	*st = AP_OK;
	for (int i = 0; i < a->nkeys; i++)
	{
		const ApVal *v = &a->evals[i];

		need += 1;
		if (a->enull[i])
			continue;
		if (kind_varlena(a->key_kinds[i]))
			need += 4 + (v->kind == AP_TYPE_NUMERIC && v->nform != AP_NF_DATUM ?
						 AP_NUMERIC_FIXED_MAX_BYTES : v->u.s.len);
		else
			need += 8;
	}
	if (need > a->keycap)
	{
		unsigned char *nb = realloc(a->keybuf, need);

		if (nb == NULL)
		{
			*st = AP_FALLBACK;
			return 0;
		}
		a->keybuf = nb;
		a->keycap = need;
	}
	for (int i = 0; i < a->nkeys; i++)
	{
		const ApVal *v = &a->evals[i];

		a->keybuf[off++] = a->enull[i] ? 1 : 0;
		if (a->enull[i])
			continue;
		if (kind_varlena(a->key_kinds[i]))
		{
			const unsigned char *data;
			uint32_t	len;
			uint32_t	hdr;

			val_payload(v, nbuf, &data, &len);
			hdr = (len + 4) << 2;	/* SET_VARSIZE, little-endian */
			memcpy(a->keybuf + off, &hdr, 4);
			if (len > 0)
				memcpy(a->keybuf + off + 4, data, len);
			off += 4 + len;
		}
		else
			off += put_fixed(a->key_kinds[i], v, a->keybuf + off);
	}
	/* keeps the key non-empty for the plain aggregate */
	if (off == 0)
		a->keybuf[off++] = 0;
	return off;
}

/* Key bytes of a group. */
static inline unsigned char *
group_key(const ApAgg *a, AggGroup *g)
{
	return (unsigned char *) g + a->group_bytes;
}

/* Slot of the group with this key, or of the empty slot where it goes. */
static uint32_t
find_slot(const ApAgg *a, uint64_t hash, const unsigned char *key, size_t keylen)
{
	uint32_t	mask = a->index_cap - 1;
	uint32_t	i = (uint32_t) hash & mask;

	for (;;)
	{
		AggGroup   *g = a->index[i];

		if (g == NULL)
			return i;
		if (g->hash == hash && g->keylen == keylen &&
			memcmp(group_key(a, g), key, keylen) == 0)
			return i;
		i = (i + 1) & mask;
	}
}

/* Bump-allocate n bytes (16-aligned) from the arena; NULL if over budget. */
static void *
arena_alloc(ApAgg *a, size_t n)
{
	size_t		sz = AGG_ALIGN(n);
	void	   *p;

	if (a->arena_used + sz > a->arena_cap ||
		agg_used(a) + sz > a->budget)
		return NULL;
	p = a->arena + a->arena_used;
	a->arena_used += sz;
	return p;
}

/* Double the index when it is half full; false if the budget forbids it. */
static bool
grow_index(ApAgg *a)
{
	uint32_t	ncap = a->index_cap * 2;
	AggGroup  **old = a->index;
	AggGroup  **ni;

	if (a->arena_used + (size_t) ncap * sizeof(AggGroup *) > a->budget)
		return false;
	ni = calloc(ncap, sizeof(AggGroup *));
	if (ni == NULL)
		return false;
	a->index = ni;
	a->index_cap = ncap;
	for (uint32_t i = 0; i < ncap / 2; i++)
	{
		if (old[i] != NULL)
			a->index[find_slot(a, old[i]->hash, group_key(a, old[i]), old[i]->keylen)] = old[i];
	}
	free(old);
	return true;
}

/* float NaN-aware three-way compare as float8_cmp_internal (NaN above all). */
static int
cmp_double(double x, double y)
{
	if (isnan(x))
		return isnan(y) ? 0 : 1;
	if (isnan(y))
		return -1;
	return x < y ? -1 : x > y ? 1 : 0;
}

/* Bytes of a bpchar payload without trailing spaces (bcTruelen). */
static uint32_t
bpchar_truelen(const unsigned char *p, uint32_t len)
{
	while (len > 0 && p[len - 1] == ' ')
		len--;
	return len;
}

/* Three-way compare of two varlena datums of kind k; AP_FALLBACK if undecodable. */
static ApStatus
cmp_varlena(int k, const unsigned char *x, uint32_t xl, const unsigned char *y, uint32_t yl,
			int *c)
{
	if (k == AP_TYPE_NUMERIC)
	{
		ApNumeric	nx,
					ny;

		if (ap_numeric_decode(x, xl, &nx) != AP_OK || ap_numeric_decode(y, yl, &ny) != AP_OK)
			return AP_FALLBACK;
		*c = ap_numeric_cmp(&nx, &ny);
		return AP_OK;
	}
	if (k == AP_TYPE_BPCHAR)
	{
		xl = bpchar_truelen(x, xl);
		yl = bpchar_truelen(y, yl);
	}
	/* varstr_cmp under C collation: memcmp, then the shorter first */
	*c = memcmp(x, y, xl < yl ? xl : yl);
	if (*c == 0 && xl != yl)
		*c = xl < yl ? -1 : 1;
	else
		*c = *c < 0 ? -1 : *c > 0;
	return AP_OK;
}

/*
 * The new state of spec sp given the current one (cur, may be !has) and
 * this tuple's argument v.  AP_FALLBACK where PostgreSQL would error or the
 * disk cannot be exact.
 */
static ApStatus
next_state(const ApAgg *a, const AggSpec *sp, const AggState *cur, const ApVal *v,
		   bool isnull, AggNext *nx)
{
	nx->st = *cur;
	nx->vdatum = NULL;
	switch (sp->fn)
	{
		case AP_AGG_COUNT_STAR:
			nx->st.has = true;
			nx->st.u.i = (cur->has ? cur->u.i : 0) + 1;
			return AP_OK;
		case AP_AGG_COUNT:
			if (isnull)
			{
				nx->touch = false;
				return AP_OK;
			}
			nx->st.has = true;
			nx->st.u.i = (cur->has ? cur->u.i : 0) + 1;
			return AP_OK;
		default:
			break;
	}
	if (isnull)
	{
		nx->touch = false;
		return AP_OK;
	}
	nx->st.has = true;

	switch (sp->fn)
	{
		case AP_AGG_SUM:
			if (sp->state_kind == AP_TYPE_NUMERIC)
			{
				ApFixed		x;

				if (sp->arg_kind == AP_TYPE_NUMERIC)
				{
					ApNumSpecial spc = AP_NUM_FINITE;

					/* NaN and infinities (and values beyond 38 digits) go to the host */
					if (v->nform == AP_NF_FIXED)
						x = v->u.fx;
					else if (v->nform != AP_NF_DATUM ||
							 ap_numeric_payload_fixed(v->u.s.p, v->u.s.len, &x, &spc) != AP_OK ||
							 spc != AP_NUM_FINITE)
						return AP_FALLBACK;
				}
				else
				{
					x.coef = v->u.i;
					x.dscale = 0;
				}
				if (!cur->has)
					nx->st.u.fx = x;
				else if (cur->u.fx.dscale == x.dscale)
				{
					/* the usual case (one column's scale): both below 10^38, no int128 overflow */
					ap_i128		r = cur->u.fx.coef + x.coef;
					ap_u128		mag = r < 0 ? -(ap_u128) r : (ap_u128) r;

					if (mag >= a->fixed_bound)
						return AP_FALLBACK;
					nx->st.u.fx.coef = r;
					nx->st.u.fx.dscale = x.dscale;
				}
				else if (ap_fixed_add(&cur->u.fx, &x, false, &nx->st.u.fx) != AP_OK)
					return AP_FALLBACK;
				return AP_OK;
			}
			if (sp->state_kind == AP_TYPE_FLOAT8)
			{
				double		x;
				double		r;

				x = sp->widen ? (double) v->u.f4 : v->u.f8;
				r = cur->has ? cur->u.f8 + x : x;
				/* float8pl's overflow error: the host raises it */
				if (cur->has && isinf(r) && !isinf(cur->u.f8) && !isinf(x))
					return AP_FALLBACK;
				nx->st.u.f8 = r;
				return AP_OK;
			}
			else
			{
				float		x = v->u.f4;
				float		r;

				r = cur->has ? cur->u.f4 + x : x;
				if (cur->has && isinf(r) && !isinf(cur->u.f4) && !isinf(x))
					return AP_FALLBACK;
				nx->st.u.f4 = r;
				return AP_OK;
			}
		case AP_AGG_MIN:
		case AP_AGG_MAX:
			{
				int			k = sp->arg_kind;
				int			c = 0;
				bool		better;

				if (kind_varlena(k))
				{
					const unsigned char *data;
					uint32_t	len;

					val_payload(v, nx->nbuf, &data, &len);
					if (cur->has &&
						cmp_varlena(k, data, len, cur->u.v.datum + 4, cur->u.v.len - 4, &c) != AP_OK)
						return AP_FALLBACK;
					better = !cur->has || (sp->fn == AP_AGG_MIN ? c < 0 : c > 0);
					if (better)
					{
						nx->vdatum = data;
						nx->vlen = len;
					}
					else
						nx->touch = false;
					return AP_OK;
				}
				if (k == AP_TYPE_FLOAT4 || k == AP_TYPE_FLOAT8)
				{
					double		x = k == AP_TYPE_FLOAT4 ? (double) v->u.f4 : v->u.f8;

					if (cur->has)
						c = cmp_double(x, cur->u.f8);
					better = !cur->has || (sp->fn == AP_AGG_MIN ? c < 0 : c > 0);
					if (better)
						nx->st.u.f8 = x;
				}
				else
				{
					int64_t		x = v->u.i;

					if (cur->has)
						c = x < cur->u.i ? -1 : x > cur->u.i;
					better = !cur->has || (sp->fn == AP_AGG_MIN ? c < 0 : c > 0);
					if (better)
						nx->st.u.i = x;
				}
				if (!better)
					nx->touch = false;
				return AP_OK;
			}
		case AP_AGG_BOOL_AND:
			nx->st.u.b = (cur->has ? cur->u.b : true) && v->u.i != 0;
			return AP_OK;
		case AP_AGG_BOOL_OR:
			nx->st.u.b = (cur->has ? cur->u.b : false) || v->u.i != 0;
			return AP_OK;
		default:
			return AP_FALLBACK;
	}
}

/*
 * Aggregate one tuple (deformed values, after visibility and the filter).
 * AP_AGG_ADDED, AP_AGG_FALLBACK (hand the TID to the host) or AP_AGG_FULL
 * (flush every group, then call again).
 */
ApAggResult
ap_agg_add(ApAgg *a, const ApValue *values)
{
	static const ApVal null_value;
	static const AggState empty_state;
	ApStatus	st;
	size_t		keylen;
	uint64_t	hash;
	uint32_t	slot;
	AggGroup   *g;
	size_t		var_need = 0;

	if (ap_program_eval(&a->prog, values, a->evals, a->enull) != AP_OK)
		return AP_AGG_FALLBACK;
	keylen = serialize_key(a, &st);
	if (st != AP_OK)
		return AP_AGG_FALLBACK;
	hash = hash_bytes(a->keybuf, keylen);
	slot = find_slot(a, hash, a->keybuf, keylen);
	g = a->index[slot];

	/* every new state first: nothing changes if the tuple goes back */
	for (int j = 0; j < a->nspecs; j++)
	{
		AggSpec    *sp = &a->specs[j];
		AggNext    *nx = &a->next[j];
		const ApVal *arg = sp->arg >= 0 ? &a->evals[sp->arg] : &null_value;
		bool		argnull = sp->arg >= 0 ? a->enull[sp->arg] : true;

		nx->touch = true;
		if (sp->filter >= 0)
		{
			/* only TRUE selects the row, as ExecQual */
			if (a->enull[sp->filter] || a->evals[sp->filter].u.i == 0)
			{
				nx->touch = false;
				continue;
			}
		}
		if (next_state(a, sp, g ? &g->states[j] : &empty_state, arg, argnull, nx) != AP_OK)
			return AP_AGG_FALLBACK;
		if (nx->touch && nx->vdatum != NULL &&
			(g == NULL || !g->states[j].has || g->states[j].u.v.cap < nx->vlen + 4))
			var_need += AGG_ALIGN(nx->vlen + 4);
	}

	/* room for a new group, its index slot and variable-length states */
	if (g == NULL)
	{
		size_t		need = a->group_bytes + AGG_ALIGN(keylen) + var_need;

		if ((a->ngroups + 1) * 2 > a->index_cap)
		{
			if (!grow_index(a))
				return a->ngroups == 0 ? AP_AGG_FALLBACK : AP_AGG_FULL;
			slot = find_slot(a, hash, a->keybuf, keylen);
		}
		if (agg_used(a) + need > a->budget)
			return a->ngroups == 0 ? AP_AGG_FALLBACK : AP_AGG_FULL;
		g = arena_alloc(a, a->group_bytes + keylen);
		memset(g, 0, a->group_bytes);
		g->hash = hash;
		g->keylen = (uint32_t) keylen;
		memcpy(group_key(a, g), a->keybuf, keylen);
		a->index[slot] = g;
		a->ngroups++;
	}
	else if (agg_used(a) + var_need > a->budget)
		return AP_AGG_FULL;

	for (int j = 0; j < a->nspecs; j++)
	{
		AggNext    *nx = &a->next[j];
		AggState   *s = &g->states[j];

		if (!nx->touch)
			continue;
		if (nx->vdatum != NULL)
		{
			uint32_t	hdr = (nx->vlen + 4) << 2;

			if (!s->has || s->u.v.cap < nx->vlen + 4)
			{
				/* space was checked above */
				s->u.v.datum = arena_alloc(a, nx->vlen + 4);
				s->u.v.cap = nx->vlen + 4;
			}
			memcpy(s->u.v.datum, &hdr, 4);
			memcpy(s->u.v.datum + 4, nx->vdatum, nx->vlen);
			s->u.v.len = nx->vlen + 4;
			s->has = true;
		}
		else
			*s = nx->st;
	}
	return AP_AGG_ADDED;
}

/*
 * Encode a state in its datum format (AP_AGG_STATE_KIND) into p, or point
 * *ptr at the stored datum (varlena min/max).  Returns the datum's length.
 */
static uint32_t
encode_state(const AggSpec *sp, const AggState *s, unsigned char *p,
			 const unsigned char **ptr)
{
	int			k = sp->state_kind;

	*ptr = p;
	if (sp->fn == AP_AGG_SUM && k == AP_TYPE_NUMERIC)
	{
		uint32_t	plen = ap_numeric_encode_fixed(&s->u.fx, p + 4);
		uint32_t	hdr = (plen + 4) << 2;	/* SET_VARSIZE, little-endian */

		memcpy(p, &hdr, 4);
		return plen + 4;
	}
	if (kind_varlena(k))
	{
		*ptr = s->u.v.datum;
		return s->u.v.len;
	}
	if (k == AP_TYPE_BOOL)
	{
		p[0] = s->u.b ? 1 : 0;
		return 1;
	}
	if (k == AP_TYPE_FLOAT4)
	{
		/* a sum accumulates in float; min/max keep the (exact) double */
		float		f = sp->fn == AP_AGG_SUM ? s->u.f4 : (float) s->u.f8;

		memcpy(p, &f, 4);
		return 4;
	}
	if (k == AP_TYPE_FLOAT8)
	{
		memcpy(p, &s->u.f8, 8);
		return 8;
	}
	switch (AP_KIND_ATTLEN(k))
	{
		case 2:
			{
				int16_t		x = (int16_t) s->u.i;

				memcpy(p, &x, 2);
				return 2;
			}
		case 4:
			{
				int32_t		x = (int32_t) s->u.i;

				memcpy(p, &x, 4);
				return 4;
			}
		default:
			memcpy(p, &s->u.i, 8);
			return 8;
	}
}

/* Point out_values[] at one group's keys and encoded states (in scratch). */
static int
group_values(ApAgg *a, AggGroup *g, unsigned char *scratch)
{
	const unsigned char *k = group_key(a, g);
	size_t		koff = 0;
	size_t		soff = 0;

	for (int i = 0; i < a->nkeys; i++)
	{
		ApValue    *v = &a->out_values[i];
		bool		isnull = k[koff++] != 0;

		v->isnull = isnull;
		v->ptr = NULL;
		v->len = 0;
		if (isnull)
			continue;
		v->ptr = k + koff;
		if (kind_varlena(a->key_kinds[i]))
		{
			uint32_t	hdr;

			memcpy(&hdr, k + koff, 4);
			v->len = hdr >> 2;
		}
		else
			v->len = (uint32_t) AP_KIND_ATTLEN(a->key_kinds[i]);
		koff += v->len;
	}
	for (int j = 0; j < a->nspecs; j++)
	{
		AggSpec    *sp = &a->specs[j];
		AggState   *s = &g->states[j];
		ApValue    *v = &a->out_values[a->nkeys + j];
		unsigned char *p = scratch + soff;

		v->isnull = !s->has;
		v->ptr = p;
		v->len = 0;
		if (!s->has)
			continue;
		v->len = encode_state(sp, s, p, &v->ptr);
		soff += 8 + AP_NUMERIC_FIXED_MAX_BYTES;
	}
	return 0;
}

/*
 * Ship every group through send (one AggPartial per batch_bytes of rows)
 * and empty the table.  memory_flush: the table filled up.  0 or -1 (the
 * send failed or out of memory; err set).
 */
int
ap_agg_flush(ApAgg *a, bool memory_flush, uint32_t batch_bytes, ApAggSendFn send, void *arg)
{
	ApRowBuf	rows;
	unsigned char *scratch;
	ApTupleDesc desc;
	int			rc = 0;

	if (a->ngroups == 0)
		return 0;
	if (ap_rowbuf_init(&rows, batch_bytes + 4096) < 0)
		return -1;
	scratch = malloc((size_t) (a->nspecs + 1) * (8 + AP_NUMERIC_FIXED_MAX_BYTES));
	if (scratch == NULL)
	{
		ap_rowbuf_free(&rows);
		return -1;
	}
	desc.natts = a->nkeys + a->nspecs;
	desc.ncached = 0;
	desc.cols = a->out_cols;
	for (uint32_t i = 0; i < a->index_cap && rc == 0; i++)
	{
		AggGroup   *g = a->index[i];

		if (g == NULL)
			continue;
		group_values(a, g, scratch);
		if (ap_rowbuf_append(&rows, &desc, a->out_project, desc.natts, a->out_values) < 0)
		{
			rc = -1;
			break;
		}
		if (rows.len >= batch_bytes)
		{
			rc = send(arg, rows.data, rows.len, rows.nrows, memory_flush);
			a->groups_shipped += rows.nrows;
			ap_rowbuf_reset(&rows);
		}
	}
	if (rc == 0 && rows.nrows > 0)
	{
		rc = send(arg, rows.data, rows.len, rows.nrows, memory_flush);
		a->groups_shipped += rows.nrows;
	}
	ap_rowbuf_free(&rows);
	free(scratch);

	/* start again, empty */
	memset(a->index, 0, (size_t) a->index_cap * sizeof(AggGroup *));
	a->arena_used = 0;
	a->ngroups = 0;
	if (memory_flush)
		a->flushes++;
	return rc;
}
