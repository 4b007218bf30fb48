/*
 * shippable_tables.c
 *	  The whitelist tables of shippable.c and their lookups: type kinds, the
 *	  comparison-operator whitelist, the date-vs-timestamptz comparisons that
 *	  encode.c rewrites, the value-producing functions and the date fields.
 *
 * The rules:
 *
 *	- Only data and pure lookups live here; the expression walker, the
 *	  host-constant logic and qual classification stay in shippable.c.
 *	- Every entry's semantics must be reproduced bit for bit by the disk VM
 *	  (diskd/vm_compile.c) for the ApCmp/ApFunc named (see proto/ap_types.h); all
 *	  listed comparisons are immutable, strict and cannot fail.
 *	- Functions are recognized by their implementation's pg_proc oid; anything
 *	  not listed stays on the host.
 *	- The tables are static: other files (shippable.c, encode.c, planner.c)
 *	  reach them only through ApLookupOperator, ApLookupDateTzOperator,
 *	  ApLookupFunction, ApDateFieldOf and ApTypeKindOf, so the planner's
 *	  decision and the encoded program can never disagree.
 */
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_type_d.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

#include "active_pg.h"
#include "shippable.h"
/* One whitelisted comparison function. */
typedef struct ApOperator
{
	Oid			funcid;			/* pg_proc oid of the implementation */
	ApOp		op;
	ApCmp		cmp;
} ApOperator;

#define AP_OPS6(prefix, suffix, cmp) \
	{F_##prefix##EQ##suffix, AP_OP_EQ, cmp}, \
	{F_##prefix##NE##suffix, AP_OP_NE, cmp}, \
	{F_##prefix##LT##suffix, AP_OP_LT, cmp}, \
	{F_##prefix##LE##suffix, AP_OP_LE, cmp}, \
	{F_##prefix##GT##suffix, AP_OP_GT, cmp}, \
	{F_##prefix##GE##suffix, AP_OP_GE, cmp}

/*
 * The whitelist.  Every entry's semantics are reproduced bit for bit by the
 * disk VM for the ApCmp named (see proto/ap_types.h).
 */
static const ApOperator ap_operators[] = {
	/* integers in any mix of widths compare as int64 */
	AP_OPS6(INT2, , AP_CMP_INT),
	AP_OPS6(INT4, , AP_CMP_INT),
	AP_OPS6(INT8, , AP_CMP_INT),
	AP_OPS6(INT24, , AP_CMP_INT),
	AP_OPS6(INT42, , AP_CMP_INT),
	AP_OPS6(INT28, , AP_CMP_INT),
	AP_OPS6(INT82, , AP_CMP_INT),
	AP_OPS6(INT48, , AP_CMP_INT),
	AP_OPS6(INT84, , AP_CMP_INT),
	/* floats compare as double (float4 widens exactly) */
	AP_OPS6(FLOAT4, , AP_CMP_FLOAT),
	AP_OPS6(FLOAT8, , AP_CMP_FLOAT),
	AP_OPS6(FLOAT48, , AP_CMP_FLOAT),
	AP_OPS6(FLOAT84, , AP_CMP_FLOAT),
	AP_OPS6(NUMERIC_, , AP_CMP_NUMERIC),
	AP_OPS6(DATE_, , AP_CMP_DATE),
	/* date vs timestamp (without time zone): no TimeZone dependency */
	AP_OPS6(DATE_, _TIMESTAMP, AP_CMP_DATE_TS),
	AP_OPS6(TIMESTAMP_, _DATE, AP_CMP_DATE_TS),
	AP_OPS6(TIMESTAMP_, , AP_CMP_TS),
	AP_OPS6(TIMESTAMPTZ_, , AP_CMP_TS),
	AP_OPS6(BOOL, , AP_CMP_BOOL),
	{F_TEXTEQ, AP_OP_EQ, AP_CMP_TEXT},
	{F_TEXTNE, AP_OP_NE, AP_CMP_TEXT},
	{F_TEXT_LT, AP_OP_LT, AP_CMP_TEXT},
	{F_TEXT_LE, AP_OP_LE, AP_CMP_TEXT},
	{F_TEXT_GT, AP_OP_GT, AP_CMP_TEXT},
	{F_TEXT_GE, AP_OP_GE, AP_CMP_TEXT},
	AP_OPS6(BPCHAR, , AP_CMP_BPCHAR),
};

/*
 * date vs timestamptz.  Casting date to timestamptz depends on the session
 * TimeZone, which the disk does not know, so the disk never compares the two;
 * instead encode.c rewrites each comparison, when the scan starts, into a
 * plain date comparison (AP_CMP_DATE) against a boundary date computed in the
 * session's TimeZone.  That needs the timestamptz side's value then, so it
 * must be a Const, a Param or a host constant (ap_datetz_shippable).
 */
typedef struct ApDateTzOperator
{
	Oid			funcid;
	ApOp		op;
	bool		date_left;		/* date is the first argument */
} ApDateTzOperator;

static const ApDateTzOperator ap_datetz_operators[] = {
	{F_DATE_EQ_TIMESTAMPTZ, AP_OP_EQ, true},
	{F_DATE_NE_TIMESTAMPTZ, AP_OP_NE, true},
	{F_DATE_LT_TIMESTAMPTZ, AP_OP_LT, true},
	{F_DATE_LE_TIMESTAMPTZ, AP_OP_LE, true},
	{F_DATE_GT_TIMESTAMPTZ, AP_OP_GT, true},
	{F_DATE_GE_TIMESTAMPTZ, AP_OP_GE, true},
	{F_TIMESTAMPTZ_EQ_DATE, AP_OP_EQ, false},
	{F_TIMESTAMPTZ_NE_DATE, AP_OP_NE, false},
	{F_TIMESTAMPTZ_LT_DATE, AP_OP_LT, false},
	{F_TIMESTAMPTZ_LE_DATE, AP_OP_LE, false},
	{F_TIMESTAMPTZ_GT_DATE, AP_OP_GT, false},
	{F_TIMESTAMPTZ_GE_DATE, AP_OP_GE, false},
};

#define AP_ARITH(prefix) \
	{F_##prefix##PL, AP_FN_ADD, 0}, \
	{F_##prefix##MI, AP_FN_SUB, 0}, \
	{F_##prefix##MUL, AP_FN_MUL, 0}, \
	{F_##prefix##DIV, AP_FN_DIV, 0}

/*
 * The value-producing functions the disk computes (proto/ap_types.h, ApFunc).
 * numeric_div is absent: the disk has no exact numeric division, so shipping
 * it would only turn every tuple into a fallback.
 */
static const ApFunction ap_functions[] = {
	/* integer arithmetic; the result kind is the function's return type */
	AP_ARITH(INT2), AP_ARITH(INT4), AP_ARITH(INT8),
	AP_ARITH(INT24), AP_ARITH(INT42), AP_ARITH(INT28),
	AP_ARITH(INT82), AP_ARITH(INT48), AP_ARITH(INT84),
	{F_INT2MOD, AP_FN_MOD, 0},
	{F_INT4MOD, AP_FN_MOD, 0},
	{F_INT8MOD, AP_FN_MOD, 0},
	{F_INT2UM, AP_FN_NEG, 0},
	{F_INT4UM, AP_FN_NEG, 0},
	{F_INT8UM, AP_FN_NEG, 0},
	/* float arithmetic */
	AP_ARITH(FLOAT4), AP_ARITH(FLOAT8),
	AP_ARITH(FLOAT48), AP_ARITH(FLOAT84),
	{F_FLOAT4UM, AP_FN_NEG, 0},
	{F_FLOAT8UM, AP_FN_NEG, 0},
	/* exact numeric arithmetic */
	{F_NUMERIC_ADD, AP_FN_ADD, 0},
	{F_NUMERIC_SUB, AP_FN_SUB, 0},
	{F_NUMERIC_MUL, AP_FN_MUL, 0},
	{F_NUMERIC_UMINUS, AP_FN_NEG, 0},
	/* casts: int <-> int (range checked), int -> numeric/float, widening; to int below */
	{F_INT4_INT2, AP_FN_CAST, 0},
	{F_INT2_INT4, AP_FN_CAST, 0},
	{F_INT4_INT8, AP_FN_CAST, 0},
	{F_INT8_INT4, AP_FN_CAST, 0},
	{F_INT2_INT8, AP_FN_CAST, 0},
	{F_INT8_INT2, AP_FN_CAST, 0},
	{F_NUMERIC_INT2, AP_FN_CAST, 0},
	{F_NUMERIC_INT4, AP_FN_CAST, 0},
	{F_NUMERIC_INT8, AP_FN_CAST, 0},
	{F_FLOAT8_INT2, AP_FN_CAST, 0},
	{F_FLOAT8_INT4, AP_FN_CAST, 0},
	{F_FLOAT8_INT8, AP_FN_CAST, 0},
	{F_FLOAT4_INT2, AP_FN_CAST, 0},
	{F_FLOAT4_INT4, AP_FN_CAST, 0},
	{F_FLOAT4_INT8, AP_FN_CAST, 0},
	{F_FLOAT8_FLOAT4, AP_FN_CAST, 0},
	{F_TIMESTAMP_DATE, AP_FN_CAST, 0},
	{F_TEXT_BPCHAR, AP_FN_CAST, 0},
	/*
	 * numeric and float -> int: the VM rounds as numeric_int4 (half away
	 * from zero) and dtoi4/ftoi4 (rint) do, and hands NaN, infinities and
	 * values out of range to the host, which raises PostgreSQL's error
	 */
	{F_INT2_NUMERIC, AP_FN_CAST, 0},
	{F_INT4_NUMERIC, AP_FN_CAST, 0},
	{F_INT8_NUMERIC, AP_FN_CAST, 0},
	{F_INT2_FLOAT4, AP_FN_CAST, 0},
	{F_INT4_FLOAT4, AP_FN_CAST, 0},
	{F_INT8_FLOAT4, AP_FN_CAST, 0},
	{F_INT2_FLOAT8, AP_FN_CAST, 0},
	{F_INT4_FLOAT8, AP_FN_CAST, 0},
	{F_INT8_FLOAT8, AP_FN_CAST, 0},
	{F_NUMERIC_NUMERIC_INT4, AP_FN_NUMERIC_TYPMOD, AP_F_TYPMOD},
	/* dates */
	{F_DATE_PLI, AP_FN_ADD, 0},
	{F_DATE_MII, AP_FN_SUB, 0},
	{F_DATE_MI, AP_FN_SUB, 0},
	{F_EXTRACT_TEXT_DATE, AP_FN_EXTRACT, AP_F_FIELD},
	{F_EXTRACT_TEXT_TIMESTAMP, AP_FN_EXTRACT, AP_F_FIELD},
	{F_DATE_PART_TEXT_TIMESTAMP, AP_FN_EXTRACT, AP_F_FIELD},
	{F_DATE_PART_TEXT_DATE, AP_FN_EXTRACT, AP_F_FIELD | AP_F_DATE_AS_TS},
	{F_DATE_TRUNC_TEXT_TIMESTAMP, AP_FN_DATE_TRUNC, AP_F_FIELD | AP_F_TRUNC},
	/* strings */
	{F_TEXTLIKE, AP_FN_LIKE, AP_F_CHARS | AP_F_COLL_DET},
	{F_TEXTNLIKE, AP_FN_NOT_LIKE, AP_F_CHARS | AP_F_COLL_DET},
	{F_BPCHARLIKE, AP_FN_LIKE, AP_F_CHARS | AP_F_COLL_DET},
	{F_BPCHARNLIKE, AP_FN_NOT_LIKE, AP_F_CHARS | AP_F_COLL_DET},
	{F_TEXTICLIKE, AP_FN_ILIKE, AP_F_CHARS | AP_F_COLL_C | AP_F_COLL_DET},
	{F_TEXTICNLIKE, AP_FN_NOT_ILIKE, AP_F_CHARS | AP_F_COLL_C | AP_F_COLL_DET},
	{F_BPCHARICLIKE, AP_FN_ILIKE, AP_F_CHARS | AP_F_COLL_C | AP_F_COLL_DET},
	{F_BPCHARICNLIKE, AP_FN_NOT_ILIKE, AP_F_CHARS | AP_F_COLL_C | AP_F_COLL_DET},
	/* regular expressions with a LIKE equivalent (ApRegexConstAsLike) */
	{F_TEXTREGEXEQ, AP_FN_LIKE, AP_F_CHARS | AP_F_COLL_DET | AP_F_REGEX},
	{F_TEXTREGEXNE, AP_FN_NOT_LIKE, AP_F_CHARS | AP_F_COLL_DET | AP_F_REGEX},
	{F_TEXTICREGEXEQ, AP_FN_ILIKE, AP_F_CHARS | AP_F_COLL_C | AP_F_COLL_DET | AP_F_REGEX},
	{F_TEXTICREGEXNE, AP_FN_NOT_ILIKE, AP_F_CHARS | AP_F_COLL_C | AP_F_COLL_DET | AP_F_REGEX},
	/* char(n): the padded value, as bpcharlike (both are the text functions) */
	{F_BPCHARREGEXEQ, AP_FN_LIKE, AP_F_CHARS | AP_F_COLL_DET | AP_F_REGEX},
	{F_BPCHARREGEXNE, AP_FN_NOT_LIKE, AP_F_CHARS | AP_F_COLL_DET | AP_F_REGEX},
	{F_BPCHARICREGEXEQ, AP_FN_ILIKE, AP_F_CHARS | AP_F_COLL_C | AP_F_COLL_DET | AP_F_REGEX},
	{F_BPCHARICREGEXNE, AP_FN_NOT_ILIKE, AP_F_CHARS | AP_F_COLL_C | AP_F_COLL_DET | AP_F_REGEX},
	{F_SUBSTRING_TEXT_INT4_INT4, AP_FN_SUBSTR, AP_F_CHARS},
	{F_SUBSTR_TEXT_INT4_INT4, AP_FN_SUBSTR, AP_F_CHARS},
	{F_SUBSTRING_TEXT_INT4, AP_FN_SUBSTR, AP_F_CHARS},
	{F_SUBSTR_TEXT_INT4, AP_FN_SUBSTR, AP_F_CHARS},
	{F_LENGTH_TEXT, AP_FN_LENGTH, AP_F_CHARS},
	{F_CHAR_LENGTH_TEXT, AP_FN_LENGTH, AP_F_CHARS},
	{F_CHARACTER_LENGTH_TEXT, AP_FN_LENGTH, AP_F_CHARS},
	{F_LENGTH_BPCHAR, AP_FN_LENGTH, AP_F_CHARS},
	{F_CHAR_LENGTH_BPCHAR, AP_FN_LENGTH, AP_F_CHARS},
	{F_CHARACTER_LENGTH_BPCHAR, AP_FN_LENGTH, AP_F_CHARS},
	{F_OCTET_LENGTH_TEXT, AP_FN_OCTET_LENGTH, 0},
	{F_OCTET_LENGTH_BPCHAR, AP_FN_OCTET_LENGTH, 0},
	{F_UPPER_TEXT, AP_FN_UPPER, AP_F_COLL_C},
	{F_LOWER_TEXT, AP_FN_LOWER, AP_F_COLL_C},
	{F_TEXTCAT, AP_FN_TEXTCAT, 0},
};

/* Field names of extract/date_part/date_trunc the disk computes. */
static const struct
{
	const char *name;
	ApDateField field;
	bool		date_ok;		/* extract(field from date) accepts it */
	bool		trunc_ok;		/* date_trunc(field, timestamp) accepts it */
}			ap_date_fields[] = {
	{"year", AP_FIELD_YEAR, true, true},
	{"quarter", AP_FIELD_QUARTER, true, true},
	{"month", AP_FIELD_MONTH, true, true},
	{"day", AP_FIELD_DAY, true, true},
	{"dow", AP_FIELD_DOW, true, false},
	{"doy", AP_FIELD_DOY, true, false},
	{"hour", AP_FIELD_HOUR, false, true},
	{"minute", AP_FIELD_MINUTE, false, true},
	{"second", AP_FIELD_SECOND, false, true},
	{"epoch", AP_FIELD_EPOCH, true, false},
	{"week", AP_FIELD_WEEK, true, true},
};

/* Map a type oid to the kind the disk knows, or AP_TYPE_OTHER. */
static ApTypeKind
ap_builtin_kind(Oid typid)
{
	switch (typid)
	{
		case BOOLOID:
			return AP_TYPE_BOOL;
		case INT2OID:
			return AP_TYPE_INT2;
		case INT4OID:
			return AP_TYPE_INT4;
		case INT8OID:
			return AP_TYPE_INT8;
		case FLOAT4OID:
			return AP_TYPE_FLOAT4;
		case FLOAT8OID:
			return AP_TYPE_FLOAT8;
		case NUMERICOID:
			return AP_TYPE_NUMERIC;
		case DATEOID:
			return AP_TYPE_DATE;
		case TIMESTAMPOID:
			return AP_TYPE_TIMESTAMP;
		case TIMESTAMPTZOID:
			return AP_TYPE_TIMESTAMPTZ;
		case TEXTOID:
			return AP_TYPE_TEXT;
		case VARCHAROID:
			return AP_TYPE_VARCHAR;
		case BPCHAROID:
			return AP_TYPE_BPCHAR;
		default:
			return AP_TYPE_OTHER;
	}
}

/* ApTypeKind of a type; domains are evaluated as their base type. */
ApTypeKind
ApTypeKindOf(Oid typid)
{
	ApTypeKind	kind;

	/* dropped columns have no type */
	if (!OidIsValid(typid))
		return AP_TYPE_OTHER;
	kind = ap_builtin_kind(typid);
	if (kind != AP_TYPE_OTHER)
		return kind;
	/* only user-defined types need the catalog lookup */
	if (typid < FirstGenbkiObjectId)
		return AP_TYPE_OTHER;
	return ap_builtin_kind(getBaseType(typid));
}

/* Look up a comparison function in the whitelist. */
bool
ApLookupOperator(Oid funcid, ApOp *op, ApCmp *cmp)
{
	for (int i = 0; i < lengthof(ap_operators); i++)
	{
		if (ap_operators[i].funcid == funcid)
		{
			*op = ap_operators[i].op;
			*cmp = ap_operators[i].cmp;
			return true;
		}
	}
	return false;
}

/* Look up a date-vs-timestamptz comparison that encode.c rewrites. */
bool
ApLookupDateTzOperator(Oid funcid, ApOp *op, bool *date_left)
{
	for (int i = 0; i < lengthof(ap_datetz_operators); i++)
	{
		if (ap_datetz_operators[i].funcid == funcid)
		{
			*op = ap_datetz_operators[i].op;
			*date_left = ap_datetz_operators[i].date_left;
			return true;
		}
	}
	return false;
}

/* Look up a value-producing function in the whitelist. */
const ApFunction *
ApLookupFunction(Oid funcid)
{
	for (int i = 0; i < lengthof(ap_functions); i++)
	{
		if (ap_functions[i].funcid == funcid)
			return &ap_functions[i];
	}
	return NULL;
}

/* Map a constant field name to an ApDateField the disk computes for argkind. */
bool
ApDateFieldOf(Node *field, ApTypeKind argkind, bool trunc, ApDateField *out)
{
	Const	   *c;
	char	   *name;

	if (field == NULL || !IsA(field, Const))
		return false;
	c = (Const *) field;
	if (c->constisnull || c->consttype != TEXTOID)
		return false;
	/* PostgreSQL downcases the name; aliases ("years", "mon") stay on the host */
	name = TextDatumGetCString(c->constvalue);
	for (char *p = name; *p; p++)
		*p = pg_ascii_tolower((unsigned char) *p);
	for (int i = 0; i < lengthof(ap_date_fields); i++)
	{
		if (strcmp(ap_date_fields[i].name, name) != 0)
			continue;
		if (trunc ? !ap_date_fields[i].trunc_ok :
			(argkind == AP_TYPE_DATE && !ap_date_fields[i].date_ok))
			return false;
		*out = ap_date_fields[i].field;
		return true;
	}
	return false;
}
