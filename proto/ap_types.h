/*
 * ap_types.h
 *	  Type kinds and operators of the disk program, shared by both sides.
 *
 * The host (extension/shippable.c) decides which PostgreSQL functions map to
 * which (op, cmp) pair and only ships pairs whose semantics the disk
 * reproduces bit for bit; the disk (diskd/vm_compile.c) refuses anything else with
 * AP_ERR_UNSUPPORTED.
 */
#ifndef AP_TYPES_H
#define AP_TYPES_H

/* Column.type_kind / Datum.type_kind */
typedef enum ApTypeKind
{
	AP_TYPE_OTHER = 0,			/* opaque: may be projected, never evaluated */
	AP_TYPE_BOOL = 1,
	AP_TYPE_INT2 = 2,
	AP_TYPE_INT4 = 3,
	AP_TYPE_INT8 = 4,
	AP_TYPE_FLOAT4 = 5,
	AP_TYPE_FLOAT8 = 6,
	AP_TYPE_NUMERIC = 7,
	AP_TYPE_DATE = 8,			/* int32 days since 2000-01-01 */
	AP_TYPE_TIMESTAMP = 9,		/* int64 microseconds since 2000-01-01 */
	AP_TYPE_TIMESTAMPTZ = 10,	/* same representation, UTC */
	AP_TYPE_TEXT = 11,
	AP_TYPE_VARCHAR = 12,
	AP_TYPE_BPCHAR = 13,
	AP_TYPE_KIND_COUNT
} ApTypeKind;

/* OpExpr.op */
typedef enum ApOp
{
	AP_OP_EQ = 1,
	AP_OP_NE = 2,
	AP_OP_LT = 3,
	AP_OP_LE = 4,
	AP_OP_GT = 5,
	AP_OP_GE = 6
} ApOp;

/*
 * OpExpr.cmp: the comparison semantics.  Both arguments must have type kinds
 * of the listed family; the VM checks it.
 */
typedef enum ApCmp
{
	AP_CMP_INT = 1,				/* int2/int4/int8 in any mix, as int64 */
	AP_CMP_FLOAT = 2,			/* float4/float8 in any mix, as double; NaN = NaN > all */
	AP_CMP_NUMERIC = 3,			/* numeric vs numeric (1.50 = 1.5; NaN = NaN > +inf) */
	AP_CMP_DATE = 4,			/* date vs date */
	AP_CMP_DATE_TS = 5,			/* date vs timestamp (either order) */
	AP_CMP_TS = 6,				/* timestamp vs timestamp, timestamptz vs timestamptz */
	AP_CMP_BOOL = 7,			/* bool vs bool (false < true) */
	AP_CMP_TEXT = 8,			/* text/varchar: bytes; ordering only shipped under C collation */
	AP_CMP_BPCHAR = 9			/* bpchar: bytes, trailing spaces not significant */
} ApCmp;

/*
 * FuncCall.fn: value-producing functions.  The host picks the variant from the
 * PostgreSQL function OID and states the result kind; the disk checks the
 * argument kinds.  "fallback" = the tuple goes to the host, which then raises
 * PostgreSQL's own error or computes the value.
 *
 *   ADD SUB MUL      int (result int2/int4/int8: overflow of that width =>
 *                    fallback), float (result float4: computed in float,
 *                    float8: in double; a finite input giving inf/nan or a
 *                    nonzero result underflowing to 0 => fallback as
 *                    PostgreSQL errors), numeric (exact; result dscale:
 *                    add/sub max(s1,s2), mul s1+s2; beyond 128-bit => fallback)
 *   DIV              int (truncates toward zero; /0 and MIN/-1 => fallback),
 *                    float (/0 => fallback), numeric (fallback unless exact
 *                    rules are implemented)
 *   MOD              int only (x % 0 => fallback; MIN % -1 = 0)
 *   NEG              int (MIN => fallback), float, numeric
 *   ADD/SUB          date +/- int4 => date (out of range => fallback);
 *                    date - date => int4
 *   CAST             between kinds: int->int (range checked), int->float8/float4,
 *                    int->numeric, float4->float8, date->timestamp,
 *                    bpchar->text (trailing spaces removed), varchar<->text
 *   NUMERIC_TYPMOD   round a numeric to the scale of result_typmod (half away
 *                    from zero); precision overflow => fallback
 *   EXTRACT          (field) from date/timestamp; result numeric (extract) or
 *                    float8 (date_part) per result_kind
 *   DATE_TRUNC       (field) of a timestamp => timestamp
 *   LIKE NOT_LIKE    text/varchar/bpchar LIKE pattern (escape '\'); args: value,
 *   ILIKE NOT_ILIKE  pattern; ILIKE only shipped under C collation (ASCII folding)
 *   SUBSTR           substring(text, from int [, for int]) by characters
 *   LENGTH           char_length (bpchar: without trailing spaces), by characters
 *   OCTET_LENGTH     bytes
 *   UPPER LOWER      C collation only: ASCII letters
 *   TEXTCAT          text || text
 */
typedef enum ApFunc
{
	AP_FN_ADD = 1,
	AP_FN_SUB = 2,
	AP_FN_MUL = 3,
	AP_FN_DIV = 4,
	AP_FN_MOD = 5,
	AP_FN_NEG = 6,
	AP_FN_CAST = 7,
	AP_FN_NUMERIC_TYPMOD = 8,
	AP_FN_EXTRACT = 9,
	AP_FN_DATE_TRUNC = 10,
	AP_FN_LIKE = 11,
	AP_FN_NOT_LIKE = 12,
	AP_FN_ILIKE = 13,
	AP_FN_NOT_ILIKE = 14,
	AP_FN_SUBSTR = 15,
	AP_FN_LENGTH = 16,
	AP_FN_OCTET_LENGTH = 17,
	AP_FN_UPPER = 18,
	AP_FN_LOWER = 19,
	AP_FN_TEXTCAT = 20
} ApFunc;

/* FuncCall.field for EXTRACT / DATE_TRUNC */
typedef enum ApDateField
{
	AP_FIELD_YEAR = 1,
	AP_FIELD_QUARTER = 2,
	AP_FIELD_MONTH = 3,
	AP_FIELD_DAY = 4,
	AP_FIELD_DOW = 5,
	AP_FIELD_DOY = 6,
	AP_FIELD_HOUR = 7,
	AP_FIELD_MINUTE = 8,
	AP_FIELD_SECOND = 9,
	AP_FIELD_EPOCH = 10,
	AP_FIELD_WEEK = 11
} ApDateField;

/* Storage of each kind's datum (what rows and constants carry). */
#define AP_KIND_ATTLEN(k) \
	((k) == AP_TYPE_BOOL ? 1 : (k) == AP_TYPE_INT2 ? 2 : \
	 ((k) == AP_TYPE_INT4 || (k) == AP_TYPE_FLOAT4 || (k) == AP_TYPE_DATE) ? 4 : \
	 ((k) == AP_TYPE_INT8 || (k) == AP_TYPE_FLOAT8 || (k) == AP_TYPE_TIMESTAMP || \
	  (k) == AP_TYPE_TIMESTAMPTZ) ? 8 : -1)
#define AP_KIND_ALIGN(k) \
	((k) == AP_TYPE_BOOL ? 'c' : (k) == AP_TYPE_INT2 ? 's' : \
	 ((k) == AP_TYPE_INT8 || (k) == AP_TYPE_FLOAT8 || (k) == AP_TYPE_TIMESTAMP || \
	  (k) == AP_TYPE_TIMESTAMPTZ) ? 'd' : 'i')

/*
 * AggSpec.fn: aggregates computed per group at the disk.  The host maps
 * PostgreSQL aggregates onto them (avg(x) = SUM + COUNT, merged and finalized
 * on the host with PostgreSQL's own division) and finalizes every value.
 * State column of each partial group row (a NULL state = no input rows):
 *   COUNT_STAR, COUNT     int8 count
 *   SUM of int2/int4/int8 numeric (exact; the host casts sum(int2/int4) to int8)
 *   SUM of numeric        numeric, exact, dscale = max dscale of the inputs
 *                         (a tuple whose value would overflow the disk's
 *                         128-bit sum goes to the host as a fallback TID)
 *   SUM of float4         float4 (accumulated in float, as float4pl does)
 *   SUM, arg_kind FLOAT8  float8: each float4 value widened to double first
 *   over a float4 arg     (float4_accum's rule, for avg(float4))
 *   SUM of float8         float8 (accumulated in double; order may differ
 *                         from PostgreSQL's serial sum -- as with parallel
 *                         aggregation, the last bits may differ)
 *   MIN, MAX              the argument's kind (text/bpchar only shipped under
 *                         C collation; float NaN sorts above all as in PG)
 *   BOOL_AND, BOOL_OR     bool
 */
typedef enum ApAggFn
{
	AP_AGG_COUNT_STAR = 1,
	AP_AGG_COUNT = 2,
	AP_AGG_SUM = 3,
	AP_AGG_MIN = 4,
	AP_AGG_MAX = 5,
	AP_AGG_BOOL_AND = 6,
	AP_AGG_BOOL_OR = 7
} ApAggFn;

/* Kind of the state column of an aggregate (see ApAggFn). */
#define AP_AGG_STATE_KIND(fn, arg_kind) \
	(((fn) == AP_AGG_COUNT_STAR || (fn) == AP_AGG_COUNT) ? AP_TYPE_INT8 : \
	 (fn) == AP_AGG_SUM ? \
		(((arg_kind) == AP_TYPE_FLOAT4 || (arg_kind) == AP_TYPE_FLOAT8) ? (arg_kind) : \
		 AP_TYPE_NUMERIC) : \
	 ((fn) == AP_AGG_BOOL_AND || (fn) == AP_AGG_BOOL_OR) ? AP_TYPE_BOOL : \
	 (arg_kind))

/* BoolExpr.kind */
typedef enum ApBoolKind
{
	AP_BOOL_AND = 1,
	AP_BOOL_OR = 2,
	AP_BOOL_NOT = 3
} ApBoolKind;

/* BooleanTest.kind */
typedef enum ApBoolTest
{
	AP_IS_TRUE = 1,
	AP_IS_NOT_TRUE = 2,
	AP_IS_FALSE = 3,
	AP_IS_NOT_FALSE = 4,
	AP_IS_UNKNOWN = 5,
	AP_IS_NOT_UNKNOWN = 6
} ApBoolTest;

/* Type kind families the comparisons and the VM's operators group by. */
#define AP_IS_INT_KIND(k)	((k) == AP_TYPE_INT2 || (k) == AP_TYPE_INT4 || (k) == AP_TYPE_INT8)
#define AP_IS_FLT_KIND(k)	((k) == AP_TYPE_FLOAT4 || (k) == AP_TYPE_FLOAT8)
#define AP_IS_TXT_KIND(k)	((k) == AP_TYPE_TEXT || (k) == AP_TYPE_VARCHAR)
#define AP_IS_STR_KIND(k)	(AP_IS_TXT_KIND(k) || (k) == AP_TYPE_BPCHAR)

/*
 * Does comparison family cmp accept operands of kinds a and b?  The host
 * ships a comparison only if it does (extension/shippable.c) and the disk
 * refuses a program in which one does not (diskd/vm_compile.c): one rule.
 */
static inline int
ap_cmp_accepts(int cmp, int a, int b)
{
	switch (cmp)
	{
		case AP_CMP_INT:
			return AP_IS_INT_KIND(a) && AP_IS_INT_KIND(b);
		case AP_CMP_FLOAT:
			return AP_IS_FLT_KIND(a) && AP_IS_FLT_KIND(b);
		case AP_CMP_NUMERIC:
			return a == AP_TYPE_NUMERIC && b == AP_TYPE_NUMERIC;
		case AP_CMP_DATE:
			return a == AP_TYPE_DATE && b == AP_TYPE_DATE;
		case AP_CMP_DATE_TS:
			return (a == AP_TYPE_DATE && b == AP_TYPE_TIMESTAMP) ||
				(a == AP_TYPE_TIMESTAMP && b == AP_TYPE_DATE);
		case AP_CMP_TS:
			return a == b && (a == AP_TYPE_TIMESTAMP || a == AP_TYPE_TIMESTAMPTZ);
		case AP_CMP_BOOL:
			return a == AP_TYPE_BOOL && b == AP_TYPE_BOOL;
		case AP_CMP_TEXT:
			return AP_IS_TXT_KIND(a) && AP_IS_TXT_KIND(b);
		case AP_CMP_BPCHAR:
			return a == AP_TYPE_BPCHAR && b == AP_TYPE_BPCHAR;
		default:
			return 0;
	}
}

#endif							/* AP_TYPES_H */
