/*
 * agg_internal.h
 *	  The disk aggregation's structures, shared by its files, which call
 *	  only downward: agg_compile.c (compiling the request) and agg_flush.c
 *	  (shipping partial groups) over agg_table.c (the hash table, adding
 *	  tuples to it) over agg_state.c (one aggregate's state transition).
 *	  See agg_compile.c for the rules.
 */
#ifndef DISKD_AGG_INTERNAL_H
#define DISKD_AGG_INTERNAL_H

#include "agg.h"
#include "vm_internal.h"

#define AGG_INDEX_INITIAL		1024	/* slots; power of two */
#define AGG_MIN_BUDGET			(16u * 1024u)
#define AGG_MAX_BUDGET			((uint64_t) 1 << 35)	/* 32 GB: AggSlot.ref's 16-byte units */
#define AGG_ALIGN(n)			(((n) + 15) & ~((size_t) 15))
#define AGG_SIMPLE_SPECS		64	/* specs the simple path takes (bits of a mask) */
#define AGG_STREAM_GROUPS		16384	/* groups at which a streaming table ships */

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

/*
 * A slot of the hash index: the upper half of the group's hash (most probes
 * of another group stop here, without touching it) and where the group is
 * in the arena, in AGG_ALIGN units plus one (0: an empty slot).
 */
typedef struct AggSlot
{
	uint32_t	tag;
	uint32_t	ref;
} AggSlot;

/* New state of one spec for the current tuple (computed before commit). */
typedef struct AggNext
{
	bool		touch;			/* the spec takes this tuple */
	AggState	st;
	const unsigned char *vdatum;	/* varlena min/max: the new winner */
	uint32_t	vlen;
	unsigned char nbuf[AP_NUMERIC_FIXED_MAX_BYTES];	/* a computed numeric winner */
} AggNext;

/*
 * The simple path's cache of recently used groups by packed key: per key a
 * word (a string of at most 7 bytes as its length and bytes, a fixed-length
 * value as its datum's bits) and a bit of the null mask.  Packed keys are
 * equal exactly when the serialized keys are, so a hit is the group
 * find_slot would return; Q1's 4 groups never reach the hash table again.
 */
#define AGG_KEYCACHE_BITS		4
#define AGG_KEYCACHE			(1 << AGG_KEYCACHE_BITS)	/* entries */
#define AGG_KEYCACHE_KEYS		4	/* grouping keys a packed key holds */

typedef struct AggKeyCacheEntry
{
	uint64_t	w[AGG_KEYCACHE_KEYS];
	uint32_t	nulls;
	uint32_t	ready;			/* ApAgg.epoch when the batch path found g ready */
	struct AggGroup *g;			/* NULL: empty */
} AggKeyCacheEntry;

/*
 * What the batch path does to one spec's state for a tuple of the batch,
 * decided once per batch from the spec and its argument's column.
 */
typedef enum AggBatchOpKind
{
	BOP_COUNT,					/* count(*), or count(x) of a batch without NULL x */
	BOP_COUNT_NONNULL,			/* count(x): one more where x is not NULL */
	BOP_SUM,					/* sum(x) of a batch without NULL x */
	BOP_SUM_NONNULL				/* sum(x): x added where it is not NULL */
} AggBatchOpKind;

typedef struct AggBatchOp
{
	uint8_t		kind;			/* AggBatchOpKind */
	int16_t		scale;			/* a sum: the scale it adds in this batch, -1 none */
	const int64_t *val;			/* the argument's column: values, */
	const bool *isnull;			/* and NULLs */
} AggBatchOp;

struct ApAgg
{
	ApProgram	prog;			/* computed projections: keys, args, filters */
	bool		prog_ok;
	ApFlat	   *flat;			/* the same as straight-line 64-bit code, or NULL */
	bool		simple;			/* flat, non-numeric keys, count/count/sum only */
	bool		batch_ok;		/* simple, and the flat program holds the last batch */
	ApFlatNum  *fnum;			/* simple: this tuple's numeric values */
	bool		keycache_on;	/* simple, nkeys <= AGG_KEYCACHE_KEYS */
	AggKeyCacheEntry keycache[AGG_KEYCACHE];	/* emptied with the table */

	/*
	 * The batch path (agg_table.c, add_batched): tuples of a batch whose group
	 * is in the key cache and ready are added straight from the flat
	 * program's registers.
	 */
	ApFlatCol  *fcols;			/* keycache_on: the registers of the batch */
	const bool *fbad;			/* tuples the flat program declined */
	bool		batch_fast;		/* the batch path may take this batch's tuples */
	struct AggBatchOp *bops;	/* per spec: what a tuple of this batch does */
	uint32_t	epoch;			/* a group's readiness holds for one epoch */
	uint64_t	batched;		/* tuples the batch path added (for the tests) */
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
	AggSlot    *index;
	uint32_t	index_cap;
	uint32_t	ngroups;
	size_t		group_bytes;	/* header + states */

	ap_u128		fixed_bound;	/* 10^38: the range of an ApFixed coefficient */

	uint64_t	groups_shipped;
	uint64_t	flushes;

	/*
	 * Streaming (agg_table.c): while the keys come clustered, the table is
	 * shipped whenever it holds AGG_STREAM_GROUPS groups.
	 */
	bool		stream_on;		/* grouped, and shipped keys do not come back */
	bool		stream_due;		/* the table is full by that rule, not by memory */
	uint64_t   *stream_bits;	/* Bloom filter of the keys shipped early, or NULL */
	uint32_t	stream_marked;	/* keys set in it since it was emptied */
	uint64_t	stream_new;		/* groups created since the first early flush */
	uint64_t	stream_again;	/* of them, ones the filter has seen shipped */
	uint64_t	stream_flushes;
};

/*
 * Is kind stored as a varlena?  (AP_KIND_ATTLEN(k) < 0, as one bit test:
 * the batch path asks it for every key of every tuple.)
 */
#define AGG_FIXED_KINDS \
	((UINT64_C(1) << AP_TYPE_BOOL) | (UINT64_C(1) << AP_TYPE_INT2) | \
	 (UINT64_C(1) << AP_TYPE_INT4) | (UINT64_C(1) << AP_TYPE_FLOAT4) | \
	 (UINT64_C(1) << AP_TYPE_DATE) | (UINT64_C(1) << AP_TYPE_INT8) | \
	 (UINT64_C(1) << AP_TYPE_FLOAT8) | (UINT64_C(1) << AP_TYPE_TIMESTAMP) | \
	 (UINT64_C(1) << AP_TYPE_TIMESTAMPTZ))
_Static_assert(AP_TYPE_KIND_COUNT <= 64, "kinds fit a 64-bit set");

static inline bool
kind_varlena(int k)
{
	return k < 0 || k >= 64 || ((AGG_FIXED_KINDS >> k) & 1) == 0;
}

/* Bytes of memory the table uses now. */
static inline size_t
agg_used(const ApAgg *a)
{
	return a->arena_used + (size_t) a->index_cap * sizeof(AggSlot);
}

/* Key bytes of a group. */
static inline unsigned char *
group_key(const ApAgg *a, AggGroup *g)
{
	return (unsigned char *) g + a->group_bytes;
}

/*
 * Payload bytes of a varlena-kind value: text bytes, or a numeric's stored
 * payload (a computed numeric is encoded into buf, as store_datum would).
 */
static inline void
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

/*
 * The new state of spec sp given the current one (cur, may be !has) and a
 * tuple's argument v (agg_state.c); AP_FALLBACK where PostgreSQL would
 * error or the disk cannot be exact.
 */
ApStatus	ap_agg_next_state(const ApAgg *a, const AggSpec *sp, const AggState *cur,
							  const ApVal *v, bool isnull, AggNext *nx);

/*
 * Memory of the table (arena, index): zeroed if asked; from 2 MB on aligned
 * to and advised for transparent huge pages, since a table of many groups
 * is probed at random and a TLB miss per probe is as dear as the cache miss
 * (under virtualization more so).  Released with free().
 */
void	   *ap_agg_alloc_table(size_t bytes, bool zero);

/* Empty the table after its groups were shipped (agg_table.c). */
void		ap_agg_table_clear(ApAgg *a);

/*
 * Streaming (agg_table.c): is the flush starting now an early one (clears
 * the mark)?  Then every group it ships goes through
 * ap_agg_stream_shipped, for the check that shipped keys do not come back.
 */
bool		ap_agg_stream_flush_starts(ApAgg *a);
void		ap_agg_stream_shipped(ApAgg *a, uint64_t hash);

/* The group of index slot i, or NULL if the slot is empty. */
static inline AggGroup *
slot_group(const ApAgg *a, uint32_t i)
{
	uint32_t	ref = a->index[i].ref;

	return ref == 0 ? NULL : (AggGroup *) (a->arena + (size_t) (ref - 1) * AGG_ALIGN(1));
}

#endif							/* DISKD_AGG_INTERNAL_H */
