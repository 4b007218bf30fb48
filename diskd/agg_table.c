/*
 * agg_table.c
 *	  The disk aggregation's hash table: serializing a tuple's group key,
 *	  finding or creating its group within the memory budget, and computing
 *	  every new state (agg_state.c) before any group changes (the rules are
 *	  in agg_compile.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agg_internal.h"

/* Tables from this size on sit on transparent huge pages (ap_agg_alloc_table). */
#define AGG_HUGE_PAGE			((size_t) 2 * 1024 * 1024)
/* Groups from which a batch's slots and groups are prefetched (prefetch_batch). */
#define AGG_PREFETCH_GROUPS		4096

/*
 * Streaming.  A table in the order of its key (TPC-H lineitem by
 * l_orderkey, a log by day) gives each group all its rows in one stretch:
 * a disk holding 375,000 such groups until the end of its scan leaves the
 * host to merge them all after the disks are done, one core idle.  So while
 * the keys come clustered the table is shipped whenever it holds
 * AGG_STREAM_GROUPS groups (an early AP_AGG_FULL): the host merges them
 * while the disk reads on, and the groups shipped are the same, but for
 * the one a flush cuts in two.  Whether shipped keys come back is watched
 * with a Bloom filter of the keys shipped early (emptied after
 * AGG_STREAM_RESET keys, so it stays sparse: the watch covers the recent
 * ones): once AGG_STREAM_WATCH groups were created after the first early
 * flush, streaming stops for the scan if more than one in
 * AGG_STREAM_AGAIN_RATIO of them had been shipped before.  Keys in no
 * order thus cost one early flush.
 */
#define AGG_STREAM_BITS			((uint32_t) 1 << 21)	/* 256 kB */
#define AGG_STREAM_RESET		131072
#define AGG_STREAM_WATCH		1024
#define AGG_STREAM_AGAIN_RATIO	8

/* The filter's two bits of a key's hash. */
static inline void
stream_bits_of(uint64_t hash, uint32_t *b1, uint32_t *b2)
{
	*b1 = (uint32_t) hash & (AGG_STREAM_BITS - 1);
	*b2 = (uint32_t) (hash >> 40) & (AGG_STREAM_BITS - 1);
}

bool
ap_agg_stream_flush_starts(ApAgg *a)
{
	bool		early = a->stream_due;

	a->stream_due = false;
	if (early && a->stream_bits == NULL)
	{
		a->stream_bits = calloc(AGG_STREAM_BITS / 64, sizeof(uint64_t));
		if (a->stream_bits == NULL)
			a->stream_on = false;	/* no watch, no streaming */
	}
	return early;
}

void
ap_agg_stream_shipped(ApAgg *a, uint64_t hash)
{
	uint32_t	b1,
				b2;

	if (a->stream_bits == NULL)
		return;
	if (a->stream_marked == AGG_STREAM_RESET)
	{
		memset(a->stream_bits, 0, AGG_STREAM_BITS / 8);
		a->stream_marked = 0;
	}
	stream_bits_of(hash, &b1, &b2);
	a->stream_bits[b1 >> 6] |= UINT64_C(1) << (b1 & 63);
	a->stream_bits[b2 >> 6] |= UINT64_C(1) << (b2 & 63);
	a->stream_marked++;
}

/*
 * A new group's key, after the first early flush: was it shipped before?
 * Stops streaming when too many were.
 */
static void
stream_watch(ApAgg *a, uint64_t hash)
{
	uint32_t	b1,
				b2;

	stream_bits_of(hash, &b1, &b2);
	a->stream_new++;
	a->stream_again += ((a->stream_bits[b1 >> 6] >> (b1 & 63)) &
						(a->stream_bits[b2 >> 6] >> (b2 & 63)) & 1);
	if (a->stream_new >= AGG_STREAM_WATCH &&
		a->stream_again * AGG_STREAM_AGAIN_RATIO > a->stream_new)
		a->stream_on = false;
}

/* Empty the table after a flush: no groups, the whole budget free again. */
void
ap_agg_table_clear(ApAgg *a)
{
	memset(a->index, 0, (size_t) a->index_cap * sizeof(AggSlot));
	memset(a->keycache, 0, sizeof(a->keycache));
	a->arena_used = 0;
	a->ngroups = 0;
}

/* The datum bytes of an integer-like value of kind k as a word (put_fixed's). */
static inline uint64_t
int_key_word(int k, int64_t i)
{
	switch (k)
	{
		case AP_TYPE_BOOL:
			return i != 0;
		case AP_TYPE_INT2:
			return (uint16_t) (int16_t) i;
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			return (uint32_t) (int32_t) i;
		default:
			return (uint64_t) i;
	}
}

/* A string key of at most 7 bytes packed into a word: its length, then its bytes. */
static inline uint64_t
str_key_word(const unsigned char *data, uint32_t len)
{
	uint64_t	w = len;

	for (uint32_t b = 0; b < len; b++)
		w |= (uint64_t) data[b] << (8 * (b + 1));
	return w;
}

/*
 * Write a fixed-length value of kind k as its datum bytes; returns the
 * length.  *word gets the same bytes as an integer, for the hash.
 */
static uint32_t
put_fixed(int k, const ApVal *v, unsigned char *p, uint64_t *word)
{
	switch (k)
	{
		case AP_TYPE_BOOL:
			*word = int_key_word(k, v->u.i);
			p[0] = (unsigned char) *word;
			return 1;
		case AP_TYPE_INT2:
			{
				int16_t		x = (int16_t) v->u.i;

				memcpy(p, &x, 2);
				*word = int_key_word(k, v->u.i);
				return 2;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		x = (int32_t) v->u.i;

				memcpy(p, &x, 4);
				*word = int_key_word(k, v->u.i);
				return 4;
			}
		case AP_TYPE_FLOAT4:
			{
				uint32_t	bits;

				memcpy(p, &v->u.f4, 4);
				memcpy(&bits, &v->u.f4, 4);
				*word = bits;
				return 4;
			}
		case AP_TYPE_FLOAT8:
			memcpy(p, &v->u.f8, 8);
			memcpy(word, &v->u.f8, 8);
			return 8;
		default:
			memcpy(p, &v->u.i, 8);
			*word = (uint64_t) v->u.i;
			return 8;
	}
}

/* Fold one word into a running key hash. */
static inline uint64_t
hash_mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
	return h ^ (h >> 32);
}

/*
 * Serialize this tuple's keys into keybuf: per key a null byte, then the
 * fixed bytes or a 4-byte-header varlena.  Returns the length, or 0 with
 * AP_FALLBACK in *st.  *hash is a hash of those bytes, computed from the
 * values as they are written (reading keybuf back right after the byte
 * stores would stall on store forwarding); equal keys give equal hashes.
 */
static size_t
serialize_key(ApAgg *a, ApStatus *st, uint64_t *hash)
{
	unsigned char nbuf[AP_NUMERIC_FIXED_MAX_BYTES];
	size_t		need = 0;
	size_t		off = 0;
	uint64_t	h = UINT64_C(0x9E3779B97F4A7C15);

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

		if (a->enull[i])
		{
			a->keybuf[off++] = 1;
			h = hash_mix(h, 1);
			continue;
		}
		a->keybuf[off++] = 0;
		if (kind_varlena(a->key_kinds[i]))
		{
			const unsigned char *data;
			uint32_t	len;
			uint32_t	hdr;
			uint32_t	j;

			val_payload(v, nbuf, &data, &len);
			hdr = (len + 4) << 2;	/* SET_VARSIZE, little-endian */
			memcpy(a->keybuf + off, &hdr, 4);
			if (len > 0)
				memcpy(a->keybuf + off + 4, data, len);
			off += 4 + len;
			if (len <= 7)
			{
				/* short keys (Q1's flags): length and bytes in one word */
				h = hash_mix(h, str_key_word(data, len));
				continue;
			}
			h = hash_mix(h, UINT64_C(0x100000000) | len);
			for (j = 0; j + 8 <= len; j += 8)
			{
				uint64_t	w;

				memcpy(&w, data + j, 8);
				h = hash_mix(h, w);
			}
			if (j < len)
			{
				uint64_t	w = 0;

				for (uint32_t b = j; b < len; b++)
					w |= (uint64_t) data[b] << (8 * (b - j));
				h = hash_mix(h, w);
			}
		}
		else
		{
			uint64_t	w;

			off += put_fixed(a->key_kinds[i], v, a->keybuf + off, &w);
			h = hash_mix(h, w);
		}
	}
	/* keeps the key non-empty for the plain aggregate */
	if (off == 0)
		a->keybuf[off++] = 0;
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 29;
	*hash = h;
	return off;
}


/*
 * Slot of the group with this key, or of the empty slot where it goes.  A
 * group is looked at only when its slot's tag matches the hash's upper half.
 */
static uint32_t
find_slot(const ApAgg *a, uint64_t hash, const unsigned char *key, size_t keylen)
{
	uint32_t	mask = a->index_cap - 1;
	uint32_t	i = (uint32_t) hash & mask;
	uint32_t	tag = (uint32_t) (hash >> 32);

	for (;;)
	{
		const AggSlot *s = &a->index[i];

		if (s->ref == 0)
			return i;
		if (s->tag == tag)
		{
			AggGroup   *g = slot_group(a, i);

			if (g->hash == hash && g->keylen == keylen &&
				memcmp(group_key(a, g), key, keylen) == 0)
				return i;
		}
		i = (i + 1) & mask;
	}
}

/* See agg_internal.h. */
void *
ap_agg_alloc_table(size_t bytes, bool zero)
{
	void	   *p;

	if (bytes < AGG_HUGE_PAGE)
		return zero ? calloc(1, bytes) : malloc(bytes);
	if (posix_memalign(&p, AGG_HUGE_PAGE, bytes) != 0)
		return NULL;
	/*
	 * Advice only: a kernel without transparent huge pages keeps small ones.
	 * An arena's first huge page's worth stays on small pages, so that a
	 * table of a few groups (a count, a rescanned subquery's aggregate)
	 * touches a few small pages instead of having 2 MB zeroed every scan.
	 */
	if (zero)
		(void) madvise(p, bytes, MADV_HUGEPAGE);
	else if (bytes > AGG_HUGE_PAGE)
		(void) madvise((char *) p + AGG_HUGE_PAGE, bytes - AGG_HUGE_PAGE, MADV_HUGEPAGE);
	if (zero)
		memset(p, 0, bytes);
	return p;
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
	uint32_t	mask = ncap - 1;
	AggSlot    *old = a->index;
	AggSlot    *ni;

	if (a->arena_used + (size_t) ncap * sizeof(AggSlot) > a->budget)
		return false;
	ni = ap_agg_alloc_table((size_t) ncap * sizeof(AggSlot), true);
	if (ni == NULL)
		return false;
	for (uint32_t i = 0; i < ncap / 2; i++)
	{
		uint32_t	j;

		if (old[i].ref == 0)
			continue;
		/* keys are distinct: the first empty slot from the group's own */
		j = (uint32_t) slot_group(a, i)->hash & mask;
		while (ni[j].ref != 0)
			j = (j + 1) & mask;
		ni[j] = old[i];
	}
	a->index = ni;
	a->index_cap = ncap;
	free(old);
	return true;
}

/*
 * Make room for and insert a new group with the current key (keybuf) at
 * slot, var_need more bytes of variable-length states to come.  NULL with
 * *r set (AP_AGG_FULL, or AP_AGG_FALLBACK on an empty table) if it does not
 * fit the budget.
 */
static AggGroup *
new_group(ApAgg *a, uint32_t slot, uint64_t hash, size_t keylen, size_t var_need,
		  ApAggResult *r)
{
	size_t		need = a->group_bytes + AGG_ALIGN(keylen) + var_need;
	AggGroup   *g;

	*r = a->ngroups == 0 ? AP_AGG_FALLBACK : AP_AGG_FULL;
	if (a->stream_on && a->ngroups >= AGG_STREAM_GROUPS)
	{
		/* ship the table now (see "Streaming" above) */
		a->stream_due = true;
		return NULL;
	}
	if ((a->ngroups + 1) * 2 > a->index_cap)
	{
		if (!grow_index(a))
			return NULL;
		slot = find_slot(a, hash, a->keybuf, keylen);
	}
	if (agg_used(a) + need > a->budget)
		return NULL;
	g = arena_alloc(a, a->group_bytes + keylen);
	memset(g, 0, a->group_bytes);
	g->hash = hash;
	g->keylen = (uint32_t) keylen;
	memcpy(group_key(a, g), a->keybuf, keylen);
	a->index[slot].tag = (uint32_t) (hash >> 32);
	a->index[slot].ref = (uint32_t) (((unsigned char *) g - a->arena) / AGG_ALIGN(1)) + 1;
	a->ngroups++;
	/* a group made, not one a full table retries: watched once */
	if (a->stream_on && a->stream_bits != NULL)
		stream_watch(a, hash);
	return g;
}

/*
 * This tuple's packed key (see AggKeyCacheEntry) and its cache entry; NULL
 * if a key does not pack (a string longer than 7 bytes).
 */
/* The key cache's entry for packed key words w and null mask nulls. */
static inline AggKeyCacheEntry *
keycache_slot(ApAgg *a, const uint64_t *w, uint32_t nulls)
{
	uint64_t	h = 0;

	/* a slot of 16 needs no strong hash: one multiply, its top bits */
	for (int i = 0; i < a->nkeys; i++)
		h += (w[i] << (7 * i)) | (w[i] >> ((64 - 7 * i) & 63));
	h = (h ^ nulls) * UINT64_C(0x9E3779B97F4A7C15);
	return &a->keycache[h >> (64 - AGG_KEYCACHE_BITS)];
}

static AggKeyCacheEntry *
pack_key(ApAgg *a, uint64_t *w, uint32_t *nulls)
{
	unsigned char scratch[AP_NUMERIC_FIXED_MAX_BYTES];

	*nulls = 0;
	for (int i = 0; i < a->nkeys; i++)
	{
		const ApVal *v = &a->evals[i];

		w[i] = 0;
		if (a->enull[i])
			*nulls |= 1u << i;
		else if (kind_varlena(a->key_kinds[i]))
		{
			const unsigned char *data;
			uint32_t	len;

			val_payload(v, scratch, &data, &len);
			if (len > 7)
				return NULL;
			w[i] = str_key_word(data, len);
		}
		else
			(void) put_fixed(a->key_kinds[i], v, scratch, &w[i]);
	}
	return keycache_slot(a, w, *nulls);
}

/* Are n packed key words equal?  (n is at most AGG_KEYCACHE_KEYS: no call to memcmp) */
static inline bool
same_words(const uint64_t *x, const uint64_t *y, int n)
{
	uint64_t	diff = 0;

	for (int i = 0; i < n; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

/* What the simple path does to one spec's state. */
#define SIMPLE_SKIP		0
#define SIMPLE_COUNT	1
#define SIMPLE_SUM		2

/* Sentinel: the simple path cannot take this tuple, use the general one. */
#define AGG_SIMPLE_GENERAL	((ApAggResult) -1)

/* What spec sp does with the evaluated tuple: SIMPLE_*. */
static inline int
simple_action(const ApAgg *a, const AggSpec *sp)
{
	/* only TRUE selects the row, as ExecQual */
	if (sp->filter >= 0 && (a->enull[sp->filter] || a->evals[sp->filter].u.i == 0))
		return SIMPLE_SKIP;
	if (sp->fn == AP_AGG_COUNT_STAR)
		return SIMPLE_COUNT;
	if (a->enull[sp->arg])
		return SIMPLE_SKIP;
	return sp->fn == AP_AGG_COUNT ? SIMPLE_COUNT : SIMPLE_SUM;
}

/* The value a SIMPLE_SUM spec adds: a numeric or an integer, as numeric. */
static inline ApFixed
simple_arg(const ApAgg *a, const AggSpec *sp)
{
	ApFixed		x;

	if (sp->arg_kind == AP_TYPE_NUMERIC)
	{
		x.coef = a->fnum[sp->arg].coef;
		x.dscale = a->fnum[sp->arg].dscale;
	}
	else
	{
		x.coef = a->evals[sp->arg].u.i;
		x.dscale = 0;
	}
	return x;
}

/*
 * The common case without the general machinery: a flat program, keys that
 * are not numeric, at most AGG_SIMPLE_SPECS specs and only count(*),
 * count(x) and sums kept as numeric (64-bit values into 128-bit sums), for
 * a tuple whose projections the flat program evaluated (evals, enull,
 * fnum).  Same states as next_state computes, and all or nothing: the
 * specs change the group's states one after the other, and a sum that
 * leaves the range of an ApFixed puts back what the specs before it did
 * (a state that was empty becomes empty again, a count is decremented, a
 * sum has the value subtracted or, where the scales differed, its old state
 * restored).  A new group's states are all empty, so nothing can overflow
 * and no group is left without its tuple.  AGG_SIMPLE_GENERAL when the
 * tuple needs the general path.
 */
static ApAggResult
add_simple(ApAgg *a)
{
	ApStatus	st;
	size_t		keylen = 0;
	uint64_t	hash = 0;
	uint32_t	slot = 0;
	AggGroup   *g = NULL;
	AggKeyCacheEntry *ce = NULL;
	uint64_t	kw[AGG_KEYCACHE_KEYS];
	uint32_t	knulls = 0;
	uint64_t	fresh = 0;		/* specs whose state was empty */
	uint64_t	rescaled = 0;	/* sums whose old state is in old[] */
	ApFixed		old[AGG_SIMPLE_SPECS];
	int			j;

	if (a->keycache_on && (ce = pack_key(a, kw, &knulls)) != NULL &&
		ce->g != NULL && ce->nulls == knulls && same_words(ce->w, kw, a->nkeys))
		g = ce->g;
	else
	{
		keylen = serialize_key(a, &st, &hash);
		if (st != AP_OK)
			return AGG_SIMPLE_GENERAL;
		slot = find_slot(a, hash, a->keybuf, keylen);
		g = slot_group(a, slot);
		if (g == NULL)
		{
			ApAggResult r;

			if ((g = new_group(a, slot, hash, keylen, 0, &r)) == NULL)
				return r;
		}
		if (ce != NULL)
		{
			memcpy(ce->w, kw, sizeof(uint64_t) * a->nkeys);
			ce->nulls = knulls;
			ce->g = g;
		}
	}

	for (j = 0; j < a->nspecs; j++)
	{
		const AggSpec *sp = &a->specs[j];
		AggState   *s = &g->states[j];
		int			act = simple_action(a, sp);
		ApFixed		x;

		if (act == SIMPLE_SKIP)
			continue;
		if (act == SIMPLE_COUNT)
		{
			fresh |= s->has ? 0 : UINT64_C(1) << j;
			s->u.i = (s->has ? s->u.i : 0) + 1;
			s->has = true;
			continue;
		}
		x = simple_arg(a, sp);
		if (!s->has)
		{
			fresh |= UINT64_C(1) << j;
			s->u.fx = x;
			s->has = true;
		}
		else if (s->u.fx.dscale == x.dscale)
		{
			/* both below 10^38 in magnitude: no 128-bit overflow */
			ap_i128		r = s->u.fx.coef + x.coef;
			ap_u128		mag = r < 0 ? -(ap_u128) r : (ap_u128) r;

			if (mag >= a->fixed_bound)
				break;
			s->u.fx.coef = r;
		}
		else
		{
			old[j] = s->u.fx;
			if (ap_fixed_add(&old[j], &x, false, &s->u.fx) != AP_OK)
			{
				s->u.fx = old[j];
				break;
			}
			rescaled |= UINT64_C(1) << j;
		}
	}
	if (j == a->nspecs)
		return AP_AGG_ADDED;

	/* spec j overflowed: undo specs 0..j-1 */
	while (--j >= 0)
	{
		const AggSpec *sp = &a->specs[j];
		AggState   *s = &g->states[j];
		int			act = simple_action(a, sp);

		if (act == SIMPLE_SKIP)
			continue;
		if (fresh & (UINT64_C(1) << j))
			memset(s, 0, sizeof(AggState));
		else if (act == SIMPLE_COUNT)
			s->u.i--;
		else if (rescaled & (UINT64_C(1) << j))
			s->u.fx = old[j];
		else
			s->u.fx.coef -= simple_arg(a, sp).coef;
	}
	return AP_AGG_FALLBACK;
}

static ApAggResult add_general(ApAgg *a, const ApValue *values, bool try_flat);

/*
 * Ask the memory for the index slots, then the groups, of a batch's rows
 * before adding them one by one: a table of many groups misses the cache on
 * both for almost every row, and 32 misses in flight cost little more than
 * one.  Only a hint: rows whose key does not serialize, or a table that
 * grows meanwhile, are simply not helped.  The rows' values are read from
 * the batch's registers again when they are added.
 */
static void
prefetch_batch(ApAgg *a, int n)
{
	uint64_t	hashes[AP_FLAT_BATCH];
	uint32_t	mask = a->index_cap - 1;
	ApStatus	st;

	n = n < AP_FLAT_BATCH ? n : AP_FLAT_BATCH;
	for (int r = 0; r < n; r++)
	{
		hashes[r] = 0;
		if (!ap_flat_batch_row(a->flat, r, a->evals, a->enull, a->fnum))
			continue;
		(void) serialize_key(a, &st, &hashes[r]);
		if (st != AP_OK)
			hashes[r] = 0;
		else
			__builtin_prefetch(&a->index[(uint32_t) hashes[r] & mask]);
	}
	for (int r = 0; r < n; r++)
	{
		uint32_t	i = (uint32_t) hashes[r] & mask;

		if (hashes[r] != 0 && a->index[i].tag == (uint32_t) (hashes[r] >> 32))
			__builtin_prefetch(slot_group(a, i));
	}
}

/*
 * A tuple the flat program evaluated (evals, enull, fnum): the simple path,
 * or the general one where that cannot take it (its numeric values were
 * read into fnum, so the general path evaluates again).
 */
static ApAggResult
add_simple_or_general(ApAgg *a, const ApValue *values)
{
	ApAggResult r = add_simple(a);

	return r != AGG_SIMPLE_GENERAL ? r : add_general(a, values, true);
}

/*
 * Aggregate one tuple (deformed values, after visibility and the filter).
 * AP_AGG_ADDED, AP_AGG_FALLBACK (hand the TID to the host) or AP_AGG_FULL
 * (flush every group, then call again).
 */
ApAggResult
ap_agg_add(ApAgg *a, const ApValue *values)
{
	if (!a->simple)
		return add_general(a, values, a->flat != NULL);
	if (!ap_flat_eval(a->flat, values, a->evals, a->enull, a->fnum))
		return add_general(a, values, false);
	return add_simple_or_general(a, values);
}

/*
 * The general path: every aggregate and key kind, the tree interpreter for
 * what the flat program declines (try_flat false: it declined this tuple
 * already).
 */
static ApAggResult
add_general(ApAgg *a, const ApValue *values, bool try_flat)
{
	static const ApVal null_value;
	static const AggState empty_state;
	ApStatus	st;
	size_t		keylen;
	uint64_t	hash;
	uint32_t	slot;
	AggGroup   *g;
	size_t		var_need = 0;

	if ((!try_flat || !ap_flat_eval(a->flat, values, a->evals, a->enull, NULL)) &&
		ap_program_eval(&a->prog, values, a->evals, a->enull) != AP_OK)
		return AP_AGG_FALLBACK;
	keylen = serialize_key(a, &st, &hash);
	if (st != AP_OK)
		return AP_AGG_FALLBACK;
	slot = find_slot(a, hash, a->keybuf, keylen);
	g = slot_group(a, slot);

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
		if (ap_agg_next_state(a, sp, g ? &g->states[j] : &empty_state, arg, argnull, nx) != AP_OK)
			return AP_AGG_FALLBACK;
		if (nx->touch && nx->vdatum != NULL &&
			(g == NULL || !g->states[j].has || g->states[j].u.v.cap < nx->vlen + 4))
			var_need += AGG_ALIGN(nx->vlen + 4);
	}

	/* room for a new group, its index slot and variable-length states */
	if (g == NULL)
	{
		ApAggResult r;

		if ((g = new_group(a, slot, hash, keylen, var_need, &r)) == NULL)
			return r;
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
 * The batch path.  Most tuples of a batch belong to a group the key cache
 * holds whose states need no care: every state has a value, every sum is
 * at the scale the batch adds and far from the bound.  Such a tuple is
 * added straight from the flat program's registers: no projection copied
 * out (batch_row), no undo to prepare (add_simple).  Any other tuple takes
 * add_simple, which may change a group's readiness; so readiness is found
 * once per group and epoch, and the epoch moves with every batch and every
 * tuple that did not take the batch path.
 *
 * Far from the bound: a state below 2^100 in magnitude takes a batch's at
 * most AP_AGG_BATCH_MAX values below 2^63 each and stays below 2^101, far
 * below 10^38 (fixed_bound), so the adds need no overflow check.
 */
#define AGG_BATCH_SAFE_BITS		100

/* Start a new epoch (never 0, the value of an emptied key cache entry). */
static inline void
next_epoch(ApAgg *a)
{
	if (++a->epoch == 0)
		a->epoch = 1;
}

/*
 * What each spec does to a tuple of the batch of n tuples (bops), with the
 * scale each sum adds; false if the batch path cannot take the batch: a
 * sum's values come at more than one scale (add_simple rescales), or an
 * aggregate has a FILTER (rare with a flat program: only a boolean column
 * can be one; add_simple decides those).
 */
static bool
batch_plan(ApAgg *a, int n)
{
	for (int j = 0; j < a->nspecs; j++)
	{
		const AggSpec *sp = &a->specs[j];
		AggBatchOp *op = &a->bops[j];
		const ApFlatCol *c = sp->arg >= 0 ? &a->fcols[sp->arg] : NULL;
		bool		nulls = false;
		bool		known = false;
		int			sc = -1;

		if (sp->filter >= 0)
			return false;
		/* the register may say it: no NULL, one scale (vm_flat.c) */
		if (c != NULL && !c->anynull && c->uscale >= 0)
		{
			if (sp->fn == AP_AGG_SUM && sp->arg_kind == AP_TYPE_NUMERIC)
				sc = c->uscale;
			known = true;
		}
		for (int r = 0; c != NULL && !known && r < n; r++)
		{
			if (a->fbad[r])
				continue;
			if (c->isnull[r])
			{
				nulls = true;
				continue;
			}
			if (sp->fn != AP_AGG_SUM || sp->arg_kind != AP_TYPE_NUMERIC)
				continue;
			if (sc < 0)
				sc = c->scale[r];
			else if (c->scale[r] != sc)
				return false;
		}
		/* an integer sums at scale 0 (simple_arg) */
		op->scale = (int16_t) (sp->fn == AP_AGG_SUM && sp->arg_kind != AP_TYPE_NUMERIC ? 0 : sc);
		op->val = c != NULL ? c->i : NULL;
		op->isnull = c != NULL ? c->isnull : NULL;
		if (sp->fn == AP_AGG_COUNT_STAR)
			op->kind = BOP_COUNT;
		else if (sp->fn == AP_AGG_COUNT)
			op->kind = nulls ? BOP_COUNT_NONNULL : BOP_COUNT;
		else
			op->kind = nulls ? BOP_SUM_NONNULL : BOP_SUM;
	}
	return true;
}

/* Is entry ce's group ready for the batch path in this epoch?  (see above) */
static bool
group_ready(ApAgg *a, AggKeyCacheEntry *ce)
{
	const AggGroup *g = ce->g;

	for (int j = 0; j < a->nspecs; j++)
	{
		const AggState *s = &g->states[j];

		if (!s->has)
			return false;
		if (a->specs[j].fn == AP_AGG_SUM)
		{
			ap_i128		hi = s->u.fx.coef >> AGG_BATCH_SAFE_BITS;

			if ((hi != 0 && hi != -1) ||
				(a->bops[j].scale >= 0 && s->u.fx.dscale != a->bops[j].scale))
				return false;
		}
	}
	ce->ready = a->epoch;
	return true;
}

/*
 * The key cache entry of the group tuple r of the batch adds to by the
 * batch path, ready in this epoch; NULL if the tuple cannot take the path
 * (the caller takes the simple path).
 */
static inline AggKeyCacheEntry *
batch_entry(ApAgg *a, int r)
{
	uint64_t	w[AGG_KEYCACHE_KEYS];
	uint32_t	nulls = 0;
	AggKeyCacheEntry *ce;

	if (a->fbad[r])
		return NULL;
	for (int i = 0; i < a->nkeys; i++)
	{
		const ApFlatCol *c = &a->fcols[i];

		w[i] = 0;
		if (c->isnull[r])
			nulls |= 1u << i;
		else if (kind_varlena(a->key_kinds[i]))
		{
			if (c->len[r] > 7)
				return NULL;
			w[i] = str_key_word(c->p[r], c->len[r]);
		}
		else
			w[i] = int_key_word(a->key_kinds[i], c->i[r]);
	}
	ce = keycache_slot(a, w, nulls);
	if (ce->g == NULL || ce->nulls != nulls || !same_words(ce->w, w, a->nkeys) ||
		(ce->ready != a->epoch && !group_ready(a, ce)))
		return NULL;
	return ce;
}

/*
 * Add the n tuples of the batch from tuple r0 on to their groups (gs[i] is
 * tuple r0 + i's) by the batch path, aggregate by aggregate: per aggregate
 * one tight loop over the tuples, no dispatch per tuple.  Sums and counts
 * add in any order.
 */
static void
add_rows(ApAgg *a, AggGroup *const *gs, int r0, int n)
{
	for (int j = 0; j < a->nspecs; j++)
	{
		const AggBatchOp *op = &a->bops[j];
		const int64_t *val = op->val + r0;
		const bool *isnull = op->isnull + r0;
		size_t		soff = offsetof(AggGroup, states) + (size_t) j * sizeof(AggState);

#define BATCH_STATE(i)	((AggState *) ((char *) gs[i] + soff))
		switch ((AggBatchOpKind) op->kind)
		{
			case BOP_COUNT:
				for (int i = 0; i < n; i++)
					BATCH_STATE(i)->u.i++;
				break;
			case BOP_COUNT_NONNULL:
				for (int i = 0; i < n; i++)
					BATCH_STATE(i)->u.i += !isnull[i];
				break;
			case BOP_SUM:
				for (int i = 0; i < n; i++)
					BATCH_STATE(i)->u.fx.coef += val[i];
				break;
			case BOP_SUM_NONNULL:
				for (int i = 0; i < n; i++)
					if (!isnull[i])
						BATCH_STATE(i)->u.fx.coef += val[i];
				break;
		}
#undef BATCH_STATE
	}
}

/*
 * Add tuple r of the batch by the batch path; false (nothing changed) if it
 * cannot: the caller takes the simple path.  The states change as
 * add_simple would change them.
 */
static bool
add_batched(ApAgg *a, int r)
{
	AggKeyCacheEntry *ce = batch_entry(a, r);

	if (ce == NULL)
		return false;
	add_rows(a, &ce->g, r, 1);
	return true;
}

/*
 * The leading tuples of the batch of n that all take the batch path, added
 * together (add_rows) instead of tuple by tuple (TPC-H Q1: the
 * aggregation's share of the disk's CPU about 15% lower).  Nothing else
 * changes a state while the groups are found (found ready, a group stays
 * ready through the batch: see AGG_BATCH_SAFE_BITS), so the states end as
 * add_batched tuple after tuple leaves them.  Returns how many tuples were
 * added: the rest go one by one, in order, through ap_agg_add_evaluated.
 */
int
ap_agg_add_batch(ApAgg *a, int n)
{
	AggGroup   *gs[AP_AGG_BATCH_MAX];
	int			k = 0;

	if (!a->batch_ok || !a->batch_fast)
		return 0;
	/* (a batch is never longer; past it the caller adds one by one) */
	if (n > AP_AGG_BATCH_MAX)
		n = AP_AGG_BATCH_MAX;
	for (; k < n; k++)
	{
		AggKeyCacheEntry *ce = batch_entry(a, k);

		if (ce == NULL)
			break;
		gs[k] = ce->g;
	}
	add_rows(a, gs, 0, k);
	a->batched += (uint64_t) k;
	return k;
}

int
ap_agg_batch_size(const ApAgg *a)
{
	return a->simple ? (AP_FLAT_BATCH < AP_AGG_BATCH_MAX ? AP_FLAT_BATCH : AP_AGG_BATCH_MAX) : 0;
}

void
ap_agg_eval_batch(ApAgg *a, const ApValue *const *rows, int n)
{
	a->batch_ok = a->simple && ap_flat_eval_batch(a->flat, rows, n);
	a->batch_fast = false;
	if (a->batch_ok && a->keycache_on)
	{
		a->fbad = ap_flat_batch_cols(a->flat, a->fcols);
		a->batch_fast = batch_plan(a, n);
		next_epoch(a);
	}
	if (a->batch_ok && a->ngroups >= AGG_PREFETCH_GROUPS)
		prefetch_batch(a, n);
}

ApAggResult
ap_agg_add_evaluated(ApAgg *a, int r, const ApValue *values)
{
	if (!a->batch_ok)
		return ap_agg_add(a, values);
	if (a->batch_fast)
	{
		if (add_batched(a, r))
		{
			a->batched++;
			return AP_AGG_ADDED;
		}
		/* what follows may change the groups' readiness */
		next_epoch(a);
	}
	/* the batch's flat program declined this tuple: straight to the tree */
	if (!ap_flat_batch_row(a->flat, r, a->evals, a->enull, a->fnum))
		return add_general(a, values, false);
	return add_simple_or_general(a, values);
}
