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
 *	- Var-free stable computations (current_date, now()::date) are evaluated
 *	  here too, once, and shipped as constants (shippable.c ApIsHostConstant).
 *	- RelabelType is dropped: it is binary-compatible by definition, and
 *	  shippable.c only accepts relabeling within one kind family.
 *	- Whitelisted functions become FuncCall; constant field names and typmods
 *	  move into the FuncCall's field and result_typmod.  The simple CASE
 *	  becomes the searched form with a copy of the tested expression in place
 *	  of each CaseTestExpr; NULLIF(a, b) becomes CASE WHEN a = b THEN NULL
 *	  ELSE a END; a IS DISTINCT FROM b becomes CASE WHEN a IS NULL THEN b IS
 *	  NOT NULL WHEN b IS NULL THEN true ELSE NOT (a = b) END.  Each has the
 *	  same three-valued result as the original; shippable expressions are
 *	  deterministic, so evaluating a copy twice changes nothing.
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
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"

#include "active_pg.h"
#include "shippable.h"

/* What the encoder needs while walking one qual list. */
typedef struct ApEncodeContext
{
	ExprContext *econtext;		/* where Params are evaluated */
	Node	   *casetest;		/* tested value of the innermost simple CASE */
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

/* A FuncCall message over already encoded arguments. */
static ActivePg__Expr *
ap_funccall(ApFunc fn, ApTypeKind result_kind, int32 typmod, ApDateField field,
			ActivePg__Expr **args, size_t nargs)
{
	ActivePg__Expr *e = ap_new_expr();
	ActivePg__FuncCall *f = palloc(sizeof(ActivePg__FuncCall));

	active_pg__func_call__init(f);
	f->fn = fn;
	f->result_kind = result_kind;
	f->result_typmod = typmod;
	f->field = field;
	f->n_args = nargs;
	f->args = args;
	e->node_case = ACTIVE_PG__EXPR__NODE_FUNC;
	e->func = f;
	return e;
}

/* A CaseExpr message from parallel arrays of conditions and results. */
static ActivePg__Expr *
ap_case(ApTypeKind result_kind, ActivePg__Expr **conds, ActivePg__Expr **results,
		int nwhens, ActivePg__Expr *defresult)
{
	ActivePg__Expr *e = ap_new_expr();
	ActivePg__CaseExpr *c = palloc(sizeof(ActivePg__CaseExpr));
	ActivePg__CaseWhen *store = palloc(sizeof(ActivePg__CaseWhen) * Max(nwhens, 1));

	active_pg__case_expr__init(c);
	c->result_kind = result_kind;
	c->n_whens = nwhens;
	c->whens = palloc(sizeof(ActivePg__CaseWhen *) * Max(nwhens, 1));
	for (int i = 0; i < nwhens; i++)
	{
		active_pg__case_when__init(&store[i]);
		store[i].cond = conds[i];
		store[i].result = results[i];
		c->whens[i] = &store[i];
	}
	c->default_result = defresult;
	e->node_case = ACTIVE_PG__EXPR__NODE_CASE_EXPR;
	e->case_expr = c;
	return e;
}

/* An IS [NOT] NULL test over an encoded argument. */
static ActivePg__Expr *
ap_null_test(ActivePg__Expr *arg, bool is_not_null)
{
	ActivePg__Expr *e = ap_new_expr();
	ActivePg__NullTest *m = palloc(sizeof(ActivePg__NullTest));

	active_pg__null_test__init(m);
	m->arg = arg;
	m->is_not_null = is_not_null;
	e->node_case = ACTIVE_PG__EXPR__NODE_NULL_TEST;
	e->null_test = m;
	return e;
}

/* A whitelisted function call (FuncExpr or non-comparison OpExpr) as FuncCall. */
static ActivePg__Expr *
ap_encode_function(const ApFunction *f, List *args, Oid resulttype, ApEncodeContext *ctx)
{
	ActivePg__Expr **enc = palloc(sizeof(ActivePg__Expr *) * Max(list_length(args), 1));
	ApDateField field = 0;
	int32		typmod = -1;
	int			nargs = 0;
	ListCell   *lc;

	foreach(lc, args)
	{
		Node	   *arg = lfirst(lc);
		int			i = foreach_current_index(lc) + 1;

		if (i == 1 && (f->flags & AP_F_FIELD))
			continue;
		if (i == 2 && (f->flags & AP_F_TYPMOD))
		{
			typmod = DatumGetInt32(((Const *) arg)->constvalue);
			continue;
		}
		if (i == 2 && (f->flags & AP_F_FIELD) &&
			!ApDateFieldOf(linitial(args), ApTypeKindOf(exprType(arg)),
						   (f->flags & AP_F_TRUNC) != 0, &field))
			elog(ERROR, "unexpected date field in ActiveScan disk expression");
		if (i == 2 && (f->flags & AP_F_REGEX))
		{
			/* the regular expression's LIKE pattern (shippable.c checked it has one) */
			char	   *like = ApRegexConstAsLike(arg);

			if (like == NULL)
				elog(ERROR, "unexpected regular expression in ActiveScan disk expression");
			enc[nargs++] = ap_konst(TEXTOID, CStringGetTextDatum(like), false);
			continue;
		}
		enc[nargs] = ap_encode(arg, ctx);
		/* date_part(text, date) is date_part(text, date::timestamp) */
		if ((f->flags & AP_F_DATE_AS_TS) && ApTypeKindOf(exprType(arg)) == AP_TYPE_DATE)
		{
			ActivePg__Expr **cast_arg = palloc(sizeof(ActivePg__Expr *));

			cast_arg[0] = enc[nargs];
			enc[nargs] = ap_funccall(AP_FN_CAST, AP_TYPE_TIMESTAMP, -1, 0, cast_arg, 1);
		}
		nargs++;
	}
	return ap_funccall(f->fn, ApTypeKindOf(resulttype), typmod, field, enc, nargs);
}

/* NULLIF and IS DISTINCT FROM, rewritten as CASE (see the file header). */
static ActivePg__Expr *
ap_encode_nullif_distinct(OpExpr *op, bool distinct, ApEncodeContext *ctx)
{
	Node	   *a = linitial(op->args);
	Node	   *b = lsecond(op->args);
	ActivePg__Expr *conds[3];
	ActivePg__Expr *results[3];

	set_opfuncid(op);
	if (!distinct)
	{
		conds[0] = ap_comparison(op->opfuncid, ap_encode(a, ctx), ap_encode(b, ctx));
		results[0] = ap_konst(op->opresulttype, (Datum) 0, true);
		return ap_case(ApTypeKindOf(op->opresulttype), conds, results, 1,
					   ap_encode(a, ctx));
	}
	conds[0] = ap_null_test(ap_encode(a, ctx), false);
	results[0] = ap_null_test(ap_encode(b, ctx), true);
	conds[1] = ap_null_test(ap_encode(b, ctx), false);
	results[1] = ap_konst(BOOLOID, BoolGetDatum(true), false);
	conds[2] = ap_konst(BOOLOID, BoolGetDatum(true), false);
	{
		ActivePg__Expr **not_arg = palloc(sizeof(ActivePg__Expr *));

		not_arg[0] = ap_comparison(op->opfuncid, ap_encode(a, ctx), ap_encode(b, ctx));
		results[2] = ap_bool(AP_BOOL_NOT, not_arg, 1);
	}
	return ap_case(AP_TYPE_BOOL, conds, results, 3, NULL);
}

/* CASE in either form as the searched form. */
static ActivePg__Expr *
ap_encode_case(CaseExpr *ce, ApEncodeContext *ctx)
{
	int			nwhens = list_length(ce->args);
	ActivePg__Expr **conds = palloc(sizeof(ActivePg__Expr *) * Max(nwhens, 1));
	ActivePg__Expr **results = palloc(sizeof(ActivePg__Expr *) * Max(nwhens, 1));
	Node	   *saved = ctx->casetest;
	ActivePg__Expr *defresult = NULL;
	ListCell   *lc;

	foreach(lc, ce->args)
	{
		CaseWhen   *w = lfirst_node(CaseWhen, lc);
		int			i = foreach_current_index(lc);

		ctx->casetest = (Node *) ce->arg;
		conds[i] = ap_encode((Node *) w->expr, ctx);
		ctx->casetest = NULL;
		results[i] = ap_encode((Node *) w->result, ctx);
	}
	if (ce->defresult != NULL)
		defresult = ap_encode((Node *) ce->defresult, ctx);
	ctx->casetest = saved;
	return ap_case(ApTypeKindOf(ce->casetype), conds, results, nwhens, defresult);
}

/*
 * The value of a Var-free expression (Params, stable functions), now.
 *
 * Compiled without a parent PlanState, as ExecPrepareExpr does for a one-shot
 * evaluation: with a parent, an expensive plan's jit flags would have LLVM
 * compile this expression, which runs once, and again on every rescan (a
 * correlated subquery's 10,000 rescans spent 15 ms each compiling).  None of
 * these expressions needs the parent: SubPlans are never host values
 * (shippable.c), PARAM_EXEC and PARAM_EXTERN Params are read through econtext.
 */
static Datum
ap_host_value(Node *node, ApEncodeContext *ctx, bool *isnull)
{
	ExprState  *state;

	state = ExecInitExpr((Expr *) node, NULL);
	return ExecEvalExprSwitchContext(state, ctx->econtext, isnull);
}

/* Evaluate a Var-free expression now (Params, stable functions) as a constant. */
static ActivePg__Expr *
ap_encode_host_value(Node *node, ApEncodeContext *ctx)
{
	Datum		value;
	bool		isnull;

	value = ap_host_value(node, ctx, &isnull);
	return ap_konst(exprType(node), value, isnull);
}

/* A date comparison of an encoded date against a date constant. */
static ActivePg__Expr *
ap_date_comparison(ApOp op, ActivePg__Expr *date, DateADT bound)
{
	Oid			funcid;

	switch (op)
	{
		case AP_OP_EQ:
			funcid = F_DATE_EQ;
			break;
		case AP_OP_NE:
			funcid = F_DATE_NE;
			break;
		case AP_OP_LT:
			funcid = F_DATE_LT;
			break;
		case AP_OP_LE:
			funcid = F_DATE_LE;
			break;
		case AP_OP_GT:
			funcid = F_DATE_GT;
			break;
		case AP_OP_GE:
			funcid = F_DATE_GE;
			break;
		default:
			elog(ERROR, "unexpected comparison %d in ActiveScan disk qual", (int) op);
	}
	return ap_comparison(funcid, date, ap_konst(DATEOID, DateADTGetDatum(bound), false));
}

/*
 * date op timestamptz (either order; shippable.c ap_datetz_shippable) as a
 * date comparison, because the disk cannot cast date to timestamptz: that
 * depends on the session TimeZone, which is fixed here, at scan start.
 *
 * Let f be that cast (local midnight), as PostgreSQL's cross-type comparison
 * sees it: non-decreasing, dates past the timestamp range sitting just inside
 * +-infinity.  With c the timestamptz value, D the largest date with
 * f(D) <= c and exact meaning f(D) = c, every date d > D has f(d) > c, so
 *
 *	f(d) <  c  <=>  exact ? d <  D : d <= D
 *	f(d) <= c  <=>  d <= D
 *	f(d) >  c  <=>  d >  D
 *	f(d) >= c  <=>  exact ? d >= D : d >  D
 *	f(d) =  c  <=>  exact ? d =  D : never
 *	f(d) <> c  <=>  exact ? d <> D : always
 *
 * "never" and "always" must still be NULL for a NULL d: d < -infinity and
 * d <= infinity are.  For infinite c, D is the same infinity and exact holds.
 */
static ActivePg__Expr *
ap_encode_datetz(OpExpr *op, ApOp apop, bool date_left, ApEncodeContext *ctx)
{
	Node	   *datearg = date_left ? linitial(op->args) : lsecond(op->args);
	Node	   *tzarg = date_left ? lsecond(op->args) : linitial(op->args);
	ActivePg__Expr *date = ap_encode(datearg, ctx);
	Datum		value;
	bool		isnull;
	TimestampTz c;
	DateADT		d;
	bool		exact;

	if (IsA(tzarg, Const))
	{
		value = ((Const *) tzarg)->constvalue;
		isnull = ((Const *) tzarg)->constisnull;
	}
	else
		value = ap_host_value(tzarg, ctx, &isnull);

	/* the functions are strict: a NULL c makes every row's result NULL */
	if (isnull)
		return ap_comparison(F_DATE_EQ, date, ap_konst(DATEOID, (Datum) 0, true));
	c = DatumGetTimestampTz(value);

	/* c op f(d) is f(d) op' c with the operator commuted */
	if (!date_left)
	{
		switch (apop)
		{
			case AP_OP_LT:
				apop = AP_OP_GT;
				break;
			case AP_OP_LE:
				apop = AP_OP_GE;
				break;
			case AP_OP_GT:
				apop = AP_OP_LT;
				break;
			case AP_OP_GE:
				apop = AP_OP_LE;
				break;
			default:
				break;
		}
	}

	/*
	 * c's local date is D, except when c precedes an ambiguous local midnight
	 * that PostgreSQL resolves to its later instant (fall-back at midnight):
	 * then f(D) > c and the answer is the day before.
	 */
	d = DatumGetDateADT(DirectFunctionCall1(timestamptz_date, TimestampTzGetDatum(c)));
	while (date_cmp_timestamptz_internal(d, c) > 0)
		d--;
	exact = date_cmp_timestamptz_internal(d, c) == 0;

	switch (apop)
	{
		case AP_OP_LT:
			return ap_date_comparison(exact ? AP_OP_LT : AP_OP_LE, date, d);
		case AP_OP_LE:
			return ap_date_comparison(AP_OP_LE, date, d);
		case AP_OP_GT:
			return ap_date_comparison(AP_OP_GT, date, d);
		case AP_OP_GE:
			return ap_date_comparison(exact ? AP_OP_GE : AP_OP_GT, date, d);
		case AP_OP_EQ:
			if (exact)
				return ap_date_comparison(AP_OP_EQ, date, d);
			return ap_date_comparison(AP_OP_LT, date, DATEVAL_NOBEGIN);
		case AP_OP_NE:
			if (exact)
				return ap_date_comparison(AP_OP_NE, date, d);
			return ap_date_comparison(AP_OP_LE, date, DATEVAL_NOEND);
		default:
			elog(ERROR, "unexpected comparison %d in ActiveScan disk qual", (int) apop);
	}
	return NULL;				/* keep compiler quiet */
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

/*
 * An operator, decided in the same order as shippable.c's walker: a value
 * the host computes at scan start, a date-vs-timestamptz comparison
 * rewritten on dates, an arithmetic operator (as the function behind it),
 * or a comparison of two arguments.
 */
static ActivePg__Expr *
ap_encode_opexpr(OpExpr *op, ApEncodeContext *ctx)
{
	const ApFunction *f;
	ApOp		apop;
	bool		date_left;

	if (ApIsHostConstant((Node *) op))
		return ap_encode_host_value((Node *) op, ctx);
	set_opfuncid(op);
	if (ApLookupDateTzOperator(op->opfuncid, &apop, &date_left))
		return ap_encode_datetz(op, apop, date_left, ctx);
	f = ApLookupFunction(op->opfuncid);
	if (f != NULL)
		return ap_encode_function(f, op->args, op->opresulttype, ctx);
	if (list_length(op->args) != 2)
		elog(ERROR, "unexpected operator arity in ActiveScan disk qual");
	return ap_comparison(op->opfuncid,
						 ap_encode(linitial(op->args), ctx),
						 ap_encode(lsecond(op->args), ctx));
}

/* A function call of the whitelist, or a value the host computes at scan start. */
static ActivePg__Expr *
ap_encode_funcexpr(FuncExpr *fe, ApEncodeContext *ctx)
{
	const ApFunction *f;

	if (ApIsHostConstant((Node *) fe))
		return ap_encode_host_value((Node *) fe, ctx);
	f = ApLookupFunction(fe->funcid);
	if (f == NULL)
		elog(ERROR, "function %u in ActiveScan disk qual is not shippable",
			 fe->funcid);
	return ap_encode_function(f, fe->args, fe->funcresulttype, ctx);
}

/*
 * The tested value of a simple CASE, in place of each CaseTestExpr of its
 * WHENs.  The tested value's own CaseTestExprs belong to an outer CASE, so
 * it is encoded with no tested value of its own.
 */
static ActivePg__Expr *
ap_encode_casetest(ApEncodeContext *ctx)
{
	Node	   *tested = ctx->casetest;
	ActivePg__Expr *e;

	if (tested == NULL)
		elog(ERROR, "unexpected CaseTestExpr in ActiveScan disk qual");
	ctx->casetest = NULL;
	e = ap_encode(tested, ctx);
	ctx->casetest = tested;
	return e;
}

static ActivePg__Expr *
ap_encode_coalesce(CoalesceExpr *co, ApEncodeContext *ctx)
{
	ActivePg__CoalesceExpr *m = palloc(sizeof(ActivePg__CoalesceExpr));
	ActivePg__Expr *e;
	ListCell   *lc;

	active_pg__coalesce_expr__init(m);
	m->result_kind = ApTypeKindOf(co->coalescetype);
	m->args = palloc(sizeof(ActivePg__Expr *) * Max(list_length(co->args), 1));
	foreach(lc, co->args)
		m->args[m->n_args++] = ap_encode(lfirst(lc), ctx);
	e = ap_new_expr();
	e->node_case = ACTIVE_PG__EXPR__NODE_COALESCE;
	e->coalesce = m;
	return e;
}

static ActivePg__Expr *
ap_encode_boolexpr(BoolExpr *b, ApEncodeContext *ctx)
{
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

static ActivePg__Expr *
ap_encode_boolean_test(BooleanTest *bt, ApEncodeContext *ctx)
{
	ActivePg__BooleanTest *m = palloc(sizeof(ActivePg__BooleanTest));
	ActivePg__Expr *e;

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
			/* evaluated once per execution; the disk sees a constant */
			return ap_encode_host_value(node, ctx);
		case T_SQLValueFunction:
		case T_CoerceViaIO:
			return ap_encode_host_value(node, ctx);
		case T_RelabelType:
			return ap_encode((Node *) ((RelabelType *) node)->arg, ctx);
		case T_OpExpr:
			return ap_encode_opexpr((OpExpr *) node, ctx);
		case T_FuncExpr:
			return ap_encode_funcexpr((FuncExpr *) node, ctx);
		case T_CaseExpr:
			return ap_encode_case((CaseExpr *) node, ctx);
		case T_CaseTestExpr:
			return ap_encode_casetest(ctx);
		case T_CoalesceExpr:
			return ap_encode_coalesce((CoalesceExpr *) node, ctx);
		case T_NullIfExpr:
			return ap_encode_nullif_distinct((OpExpr *) node, false, ctx);
		case T_DistinctExpr:
			return ap_encode_nullif_distinct((OpExpr *) node, true, ctx);
		case T_ScalarArrayOpExpr:
			return ap_encode_saop((ScalarArrayOpExpr *) node, ctx);
		case T_BoolExpr:
			return ap_encode_boolexpr((BoolExpr *) node, ctx);
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) node;

				return ap_null_test(ap_encode((Node *) nt->arg, ctx),
									nt->nulltesttype == IS_NOT_NULL);
			}
		case T_BooleanTest:
			return ap_encode_boolean_test((BooleanTest *) node, ctx);
		default:
			elog(ERROR, "unrecognized node type %d in ActiveScan disk qual",
				 (int) nodeTag(node));
	}
	return NULL;				/* keep compiler quiet */
}

/* The disk quals (implicitly ANDed) as one protobuf Expr; NULL if none. */
ActivePg__Expr *
ApEncodeQuals(List *disk_quals, ExprContext *econtext)
{
	ApEncodeContext ctx;
	ActivePg__Expr **args;
	int			nargs = 0;
	ListCell   *lc;

	ctx.econtext = econtext;
	ctx.casetest = NULL;

	if (disk_quals == NIL)
		return NULL;
	if (list_length(disk_quals) == 1)
		return ap_encode(linitial(disk_quals), &ctx);

	args = palloc(sizeof(ActivePg__Expr *) * list_length(disk_quals));
	foreach(lc, disk_quals)
		args[nargs++] = ap_encode(lfirst(lc), &ctx);
	return ap_bool(AP_BOOL_AND, args, nargs);
}

/* Computed projections (shippable values), one Expr each, in list order. */
ActivePg__Expr **
ApEncodeValues(List *exprs, ExprContext *econtext, size_t *nexprs)
{
	ApEncodeContext ctx;
	ActivePg__Expr **out = palloc(sizeof(ActivePg__Expr *) * Max(list_length(exprs), 1));
	ListCell   *lc;

	ctx.econtext = econtext;
	ctx.casetest = NULL;
	*nexprs = 0;
	foreach(lc, exprs)
		out[(*nexprs)++] = ap_encode(lfirst(lc), &ctx);
	return out;
}

/* Does the encoded tree use a node that needs AP_CAP_EXPRESSIONS? */
bool
ApExprNeedsExpressions(const ActivePg__Expr *e)
{
	size_t		i;

	check_stack_depth();
	if (e == NULL)
		return false;
	switch (e->node_case)
	{
		case ACTIVE_PG__EXPR__NODE_FUNC:
		case ACTIVE_PG__EXPR__NODE_CASE_EXPR:
		case ACTIVE_PG__EXPR__NODE_COALESCE:
			return true;
		case ACTIVE_PG__EXPR__NODE_OP:
			for (i = 0; i < e->op->n_args; i++)
				if (ApExprNeedsExpressions(e->op->args[i]))
					return true;
			return false;
		case ACTIVE_PG__EXPR__NODE_BOOL_EXPR:
			for (i = 0; i < e->bool_expr->n_args; i++)
				if (ApExprNeedsExpressions(e->bool_expr->args[i]))
					return true;
			return false;
		case ACTIVE_PG__EXPR__NODE_NULL_TEST:
			return ApExprNeedsExpressions(e->null_test->arg);
		case ACTIVE_PG__EXPR__NODE_BOOL_TEST:
			return ApExprNeedsExpressions(e->bool_test->arg);
		default:
			return false;
	}
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
