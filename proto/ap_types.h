/*
 * ap_types.h
 *	  Type kinds and operators of the disk program, shared by both sides.
 *
 * The host (extension/shippable.c) decides which PostgreSQL functions map to
 * which (op, cmp) pair and only ships pairs whose semantics the disk
 * reproduces bit for bit; the disk (diskd/vm.c) refuses anything else with
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

#endif							/* AP_TYPES_H */
