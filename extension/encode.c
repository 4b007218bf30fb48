/*
 * encode.c
 *	  Plan expressions and the tuple descriptor -> the protobuf disk program.
 *
 * Only trees that shippable.c accepted reach this file; anything else is a
 * can't-happen and raises elog(ERROR).  The rules of the encoding:
 *
 *	- Constants travel in PostgreSQL's own datum representation
 *	  (proto/active_pg.proto, message Datum): pass-by-value types as their
 *	  typlen bytes in little-endian order, written explicitly so the wire
 *	  format does not depend on the host's byte order; varlena values
 *	  detoasted and with a plain 4-byte header (never short, compressed or
 *	  external), so the disk never needs the TOAST table for a constant.
 *	- Params are evaluated here, when the scan starts (and again on rescan),
 *	  and shipped as constants: the disk never sees a parameter.
 *	- RelabelType is dropped: it is binary-compatible by definition, and
 *	  shippable.c only accepts relabeling within one kind family.
 *	- "x op ANY (array)" becomes an OR of comparisons, "x op ALL (array)" an
 *	  AND; both have the same three-valued result as the array form (an empty
 *	  array gives false for ANY and true for ALL, a NULL array gives NULL).
 *
 * Everything is palloc'd in CurrentMemoryContext and freed with it: the
 * caller never calls protobuf_c_message_free_unpacked on these trees.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "active_pg.h"
#include "shippable.h"

/* What the encoder needs while walking one qual list. */
typedef struct ApEncodeContext
{
	PlanState  *parent;			/* for ExecInitExpr of Params */
	ExprContext *econtext;		/* where Params are evaluated */
} ApEncodeContext;

static ActivePg__Expr *ap_encode(Node *node, ApEncodeContext *ctx);

/* A new, empty Expr. */
static ActivePg__Expr *
ap_new_expr(void)
{
	ActivePg__Expr *e = palloc(sizeof(ActivePg__Expr));

	active_pg__expr__init(e);
	return e;
}

/* A Datum message holding value of type typid in the wire representation. */
static ActivePg__Datum *
ap_encode_datum(Oid typid, Datum value, bool isnull)
{
	ActivePg__Datum *d = palloc(sizeof(ActivePg__Datum));
	int16		typlen;
	bool		typbyval;

	active_pg__datum__init(d);
	d->type_kind = ApTypeKindOf(typid);
	d->isnull = isnull;
	if (isnull)
		return d;

	get_typlenbyval(typid, &typlen, &typbyval);
	if (typbyval)
	{
		uint64		bits;
		unsigned char *buf;

		switch (typlen)
		{
			case 1:
				bits = DatumGetUInt8(value);
				break;
			case 2:
				bits = DatumGetUInt16(value);
				break;
			case 4:
				bits = DatumGetUInt32(value);
				break;
			case 8:
				bits = DatumGetUInt64(value);
				break;
			default:
				elog(ERROR, "unexpected length %d of pass-by-value type %u in ActiveScan disk qual",
					 typlen, typid);
				bits = 0;		/* keep compiler quiet */
				break;
		}
		buf = palloc(typlen);
		for (int i = 0; i < typlen; i++)
			buf[i] = (unsigned char) (bits >> (8 * i));
		d->value.data = buf;
		d->value.len = typlen;
	}
	else if (typlen > 0)
	{
		/* fixed-length by reference (int8/float8 on 32-bit builds) */
		d->value.data = palloc(typlen);
		memcpy(d->value.data, DatumGetPointer(value), typlen);
		d->value.len = typlen;
	}
	else if (typlen == -1)
	{
		/* expands external, compressed and short-header values alike */
		struct varlena *v = pg_detoast_datum((struct varlena *) DatumGetPointer(value));

		d->value.len = VARSIZE(v);
		d->value.data = palloc(d->value.len);
		memcpy(d->value.data, v, d->value.len);
	}
	else
		elog(ERROR, "unexpected length %d of type %u in ActiveScan disk qual",
			 typlen, typid);
	return d;
}

/* An Expr holding a constant. */
static ActivePg__Expr *
ap_konst(Oid typid, Datum value, bool isnull)
{
	ActivePg__Expr *e = ap_new_expr();

	e->node_case = ACTIVE_PG__EXPR__NODE_KONST;
	e->konst = ap_encode_datum(typid, value, isnull);
	return e;
}

/* An OpExpr message for a whitelisted comparison function. */
static ActivePg__Expr *
ap_comparison(Oid funcid, ActivePg__Expr *left, ActivePg__Expr *right)
{
	ActivePg__Expr *e = ap_new_expr();
	ActivePg__OpExpr *op = palloc(sizeof(ActivePg__OpExpr));
	ApOp		apop;
	ApCmp		apcmp;

	if (!ApLookupOperator(funcid, &apop, &apcmp))
		elog(ERROR, "function %u in ActiveScan disk qual is not shippable", funcid);
	active_pg__op_expr__init(op);
	op->op = apop;
	op->cmp = apcmp;
	op->n_args = 2;
	op->args = palloc(sizeof(ActivePg__Expr *) * 2);
	op->args[0] = left;
	op->args[1] = right;
	e->node_case = ACTIVE_PG__EXPR__NODE_OP;
	e->op = op;
	return e;
}

/* A BoolExpr message over already encoded arguments. */
static ActivePg__Expr *
ap_bool(ApBoolKind kind, ActivePg__Expr **args, size_t nargs)
{
	ActivePg__Expr *e = ap_new_expr();
	ActivePg__BoolExpr *b = palloc(sizeof(ActivePg__BoolExpr));

	active_pg__bool_expr__init(b);
	b->kind = kind;
	b->n_args = nargs;
	b->args = args;
	e->node_case = ACTIVE_PG__EXPR__NODE_BOOL_EXPR;
	e->bool_expr = b;
	return e;
}

/* Combine per-element comparisons of an ANY/ALL into OR/AND (or a constant). */
static ActivePg__Expr *
ap_saop_combine(bool use_or, ActivePg__Expr **items, int nitems)
{
	if (nitems == 0)
		return ap_konst(BOOLOID, BoolGetDatum(!use_or), false);
	if (nitems == 1)
		return items[0];
	return ap_bool(use_or ? AP_BOOL_OR : AP_BOOL_AND, items, nitems);
}

/* x op ANY/ALL (array) as OR/AND of x op element. */
static ActivePg__Expr *
ap_encode_saop(ScalarArrayOpExpr *saop, ApEncodeContext *ctx)
{
	Node	   *scalar = linitial(saop->args);
	Node	   *array = lsecond(saop->args);
	Oid			elem_type = get_element_type(exprType(array));
	ActivePg__Expr **items;
	int			nitems = 0;

	set_sa_opfuncid(saop);
	if (IsA(array, Const))
	{
		Const	   *c = (Const *) array;
		ArrayType  *arr;
		int16		elmlen;
		bool		elmbyval;
		char		elmalign;
		Datum	   *elems;
		bool	   *nulls;
		int			nelems;

		/* op ANY/ALL (NULL) is NULL */
		if (c->constisnull)
			return ap_konst(BOOLOID, (Datum) 0, true);
		arr = DatumGetArrayTypeP(c->constvalue);
		get_typlenbyvalalign(elem_type, &elmlen, &elmbyval, &elmalign);
		deconstruct_array(arr, elem_type, elmlen, elmbyval, elmalign,
						  &elems, &nulls, &nelems);
		items = palloc(sizeof(ActivePg__Expr *) * Max(nelems, 1));
		for (int i = 0; i < nelems; i++)
			items[nitems++] = ap_comparison(saop->opfuncid, ap_encode(scalar, ctx),
											ap_konst(elem_type, elems[i], nulls[i]));
	}
	else if (IsA(array, ArrayExpr))
	{
		ArrayExpr  *ae = (ArrayExpr *) array;
		ListCell   *lc;

		items = palloc(sizeof(ActivePg__Expr *) * Max(list_length(ae->elements), 1));
		foreach(lc, ae->elements)
			items[nitems++] = ap_comparison(saop->opfuncid, ap_encode(scalar, ctx),
											ap_encode(lfirst(lc), ctx));
	}
	else
	{
		elog(ERROR, "unrecognized node type %d in ActiveScan disk qual",
			 (int) nodeTag(array));
		return NULL;			/* keep compiler quiet */
	}
	return ap_saop_combine(saop->useOr, items, nitems);
}

/* Encode one expression node (whitelisted by shippable.c). */
static ActivePg__Expr *
ap_encode(Node *node, ApEncodeContext *ctx)
{
	ActivePg__Expr *e;

	check_stack_depth();
	if (node == NULL)
		elog(ERROR, "unexpected NULL expression in ActiveScan disk qual");

	switch (nodeTag(node))
	{
		case T_Var:
			e = ap_new_expr();
			e->node_case = ACTIVE_PG__EXPR__NODE_VAR;
			e->var = ((Var *) node)->varattno;
			return e;
		case T_Const:
			{
				Const	   *c = (Const *) node;

				return ap_konst(c->consttype, c->constvalue, c->constisnull);
			}
		case T_Param:
			{
				Param	   *p = (Param *) node;
				ExprState  *state;
				Datum		value;
				bool		isnull;

				/* evaluated once per execution; the disk sees a constant */
				state = ExecInitExpr((Expr *) p, ctx->parent);
				value = ExecEvalExprSwitchContext(state, ctx->econtext, &isnull);
				return ap_konst(p->paramtype, value, isnull);
			}
		case T_RelabelType:
			return ap_encode((Node *) ((RelabelType *) node)->arg, ctx);
		case T_OpExpr:
			{
				OpExpr	   *op = (OpExpr *) node;

				if (list_length(op->args) != 2)
					elog(ERROR, "unexpected operator arity in ActiveScan disk qual");
				set_opfuncid(op);
				return ap_comparison(op->opfuncid,
									 ap_encode(linitial(op->args), ctx),
									 ap_encode(lsecond(op->args), ctx));
			}
		case T_ScalarArrayOpExpr:
			return ap_encode_saop((ScalarArrayOpExpr *) node, ctx);
		case T_BoolExpr:
			{
				BoolExpr   *b = (BoolExpr *) node;
				ActivePg__Expr **args;
				ApBoolKind	kind;
				int			nargs = 0;
				ListCell   *lc;

				switch (b->boolop)
				{
					case AND_EXPR:
						kind = AP_BOOL_AND;
						break;
					case OR_EXPR:
						kind = AP_BOOL_OR;
						break;
					case NOT_EXPR:
						kind = AP_BOOL_NOT;
						break;
					default:
						elog(ERROR, "unrecognized boolop %d in ActiveScan disk qual",
							 (int) b->boolop);
						kind = AP_BOOL_AND; /* keep compiler quiet */
						break;
				}
				args = palloc(sizeof(ActivePg__Expr *) * Max(list_length(b->args), 1));
				foreach(lc, b->args)
					args[nargs++] = ap_encode(lfirst(lc), ctx);
				return ap_bool(kind, args, nargs);
			}
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) node;
				ActivePg__NullTest *m = palloc(sizeof(ActivePg__NullTest));

				active_pg__null_test__init(m);
				m->arg = ap_encode((Node *) nt->arg, ctx);
				m->is_not_null = (nt->nulltesttype == IS_NOT_NULL);
				e = ap_new_expr();
				e->node_case = ACTIVE_PG__EXPR__NODE_NULL_TEST;
				e->null_test = m;
				return e;
			}
		case T_BooleanTest:
			{
				BooleanTest *bt = (BooleanTest *) node;
				ActivePg__BooleanTest *m = palloc(sizeof(ActivePg__BooleanTest));

				active_pg__boolean_test__init(m);
				m->arg = ap_encode((Node *) bt->arg, ctx);
				switch (bt->booltesttype)
				{
					case IS_TRUE:
						m->kind = AP_IS_TRUE;
						break;
					case IS_NOT_TRUE:
						m->kind = AP_IS_NOT_TRUE;
						break;
					case IS_FALSE:
						m->kind = AP_IS_FALSE;
						break;
					case IS_NOT_FALSE:
						m->kind = AP_IS_NOT_FALSE;
						break;
					case IS_UNKNOWN:
						m->kind = AP_IS_UNKNOWN;
						break;
					case IS_NOT_UNKNOWN:
						m->kind = AP_IS_NOT_UNKNOWN;
						break;
					default:
						elog(ERROR, "unrecognized booltesttype %d in ActiveScan disk qual",
							 (int) bt->booltesttype);
				}
				e = ap_new_expr();
				e->node_case = ACTIVE_PG__EXPR__NODE_BOOL_TEST;
				e->bool_test = m;
				return e;
			}
		default:
			elog(ERROR, "unrecognized node type %d in ActiveScan disk qual",
				 (int) nodeTag(node));
	}
	return NULL;				/* keep compiler quiet */
}

/* The disk quals (implicitly ANDed) as one protobuf Expr; NULL if none. */
ActivePg__Expr *
ApEncodeQuals(List *disk_quals, PlanState *parent, ExprContext *econtext)
{
	ApEncodeContext ctx;
	ActivePg__Expr **args;
	int			nargs = 0;
	ListCell   *lc;

	ctx.parent = parent;
	ctx.econtext = econtext;

	if (disk_quals == NIL)
		return NULL;
	if (list_length(disk_quals) == 1)
		return ap_encode(linitial(disk_quals), &ctx);

	args = palloc(sizeof(ActivePg__Expr *) * list_length(disk_quals));
	foreach(lc, disk_quals)
		args[nargs++] = ap_encode(lfirst(lc), &ctx);
	return ap_bool(AP_BOOL_AND, args, nargs);
}

/* One Column per attribute of the descriptor, dropped ones included. */
ActivePg__Column **
ApEncodeColumns(TupleDesc tupdesc, size_t *ncols)
{
	ActivePg__Column **cols;
	ActivePg__Column *store;

	*ncols = tupdesc->natts;
	cols = palloc(sizeof(ActivePg__Column *) * Max(tupdesc->natts, 1));
	store = palloc(sizeof(ActivePg__Column) * Max(tupdesc->natts, 1));
	for (int i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		ActivePg__Column *col = &store[i];

		active_pg__column__init(col);
		col->type_oid = att->atttypid;
		col->typmod = att->atttypmod;
		col->attlen = att->attlen;
		col->attalign = (uint32) (unsigned char) att->attalign;
		col->attbyval = att->attbyval;
		col->attnotnull = att->attnotnull;
		col->attisdropped = att->attisdropped;
		/* a dropped column is skipped by its length, never evaluated */
		col->type_kind = att->attisdropped ? AP_TYPE_OTHER : ApTypeKindOf(att->atttypid);
		cols[i] = col;
	}
	return cols;
}
