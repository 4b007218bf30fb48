/*
 * exprbuild.h
 *	  Builders of protobuf disk-program nodes for diskd's C unit tests.
 *
 * Rules of this file:
 *  - Every node is allocated from one test arena and freed by tfree_all(),
 *    so a test builds whole programs without bookkeeping.
 *  - Functions are static inline so that each test program includes what it
 *    needs without unused-function warnings.
 */
#ifndef DISKD_TEST_EXPRBUILD_H
#define DISKD_TEST_EXPRBUILD_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskd.h"

static void *arena[400000];
static int	narena;

/* Zeroed allocation recorded for tfree_all(). */
static inline void *
talloc(size_t n)
{
	void	   *p = calloc(1, n);

	if (p == NULL || narena == (int) (sizeof(arena) / sizeof(arena[0])))
	{
		fprintf(stderr, "test arena exhausted\n");
		exit(2);
	}
	arena[narena++] = p;
	return p;
}

/* Free every test-built protobuf node. */
static inline void
tfree_all(void)
{
	while (narena > 0)
		free(arena[--narena]);
}

/* Expr: attribute reference. */
static inline ActivePg__Expr *
E_var(int attno)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__Expr init = ACTIVE_PG__EXPR__INIT;

	*e = init;
	e->node_case = ACTIVE_PG__EXPR__NODE_VAR;
	e->var = attno;
	return e;
}

/* Expr: constant of a kind from raw datum bytes. */
static inline ActivePg__Expr *
E_const(int kind, const void *bytes, size_t len, bool isnull)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__Datum *d = talloc(sizeof(*d));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__Datum dinit = ACTIVE_PG__DATUM__INIT;

	*e = einit;
	*d = dinit;
	d->isnull = isnull;
	d->type_kind = (uint32_t) kind;
	if (len > 0)
	{
		d->value.data = talloc(len);
		memcpy(d->value.data, bytes, len);
	}
	d->value.len = len;
	e->node_case = ACTIVE_PG__EXPR__NODE_KONST;
	e->konst = d;
	return e;
}

/* Expr: int2 constant. */
static inline ActivePg__Expr *
E_i2(int16_t v)
{
	return E_const(AP_TYPE_INT2, &v, 2, false);
}

/* Expr: int4 constant. */
static inline ActivePg__Expr *
E_i4(int32_t v)
{
	return E_const(AP_TYPE_INT4, &v, 4, false);
}

/* Expr: int8 constant. */
static inline ActivePg__Expr *
E_i8(int64_t v)
{
	return E_const(AP_TYPE_INT8, &v, 8, false);
}

/* Expr: float4 constant. */
static inline ActivePg__Expr *
E_f4(float v)
{
	return E_const(AP_TYPE_FLOAT4, &v, 4, false);
}

/* Expr: float8 constant. */
static inline ActivePg__Expr *
E_f8(double v)
{
	return E_const(AP_TYPE_FLOAT8, &v, 8, false);
}

/* Expr: bool constant. */
static inline ActivePg__Expr *
E_bool(bool v)
{
	unsigned char b = v ? 1 : 0;

	return E_const(AP_TYPE_BOOL, &b, 1, false);
}

/* Expr: function call. */
static inline ActivePg__Expr *
FN(int fn, int rkind, int field, int32_t typmod, int nargs, ActivePg__Expr *a0,
   ActivePg__Expr *a1, ActivePg__Expr *a2)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__FuncCall *f = talloc(sizeof(*f));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__FuncCall finit = ACTIVE_PG__FUNC_CALL__INIT;

	*e = einit;
	*f = finit;
	f->fn = (uint32_t) fn;
	f->result_kind = (uint32_t) rkind;
	f->field = (uint32_t) field;
	f->result_typmod = typmod;
	f->n_args = (size_t) nargs;
	f->args = talloc(3 * sizeof(ActivePg__Expr *));
	f->args[0] = a0;
	f->args[1] = a1;
	f->args[2] = a2;
	e->node_case = ACTIVE_PG__EXPR__NODE_FUNC;
	e->func = f;
	return e;
}

/* Shorthands: binary and unary functions. */
static inline ActivePg__Expr *
F2(int fn, int rkind, ActivePg__Expr *a, ActivePg__Expr *b)
{
	return FN(fn, rkind, 0, -1, 2, a, b, NULL);
}

static inline ActivePg__Expr *
F1(int fn, int rkind, ActivePg__Expr *a)
{
	return FN(fn, rkind, 0, -1, 1, a, NULL, NULL);
}

/* Expr: comparison. */
static inline ActivePg__Expr *
OP(int op, int cmp, ActivePg__Expr *a, ActivePg__Expr *b)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__OpExpr *o = talloc(sizeof(*o));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__OpExpr oinit = ACTIVE_PG__OP_EXPR__INIT;

	*e = einit;
	*o = oinit;
	o->op = (uint32_t) op;
	o->cmp = (uint32_t) cmp;
	o->n_args = 2;
	o->args = talloc(2 * sizeof(ActivePg__Expr *));
	o->args[0] = a;
	o->args[1] = b;
	e->node_case = ACTIVE_PG__EXPR__NODE_OP;
	e->op = o;
	return e;
}

/* Expr: text-like constant of kind with a short (1-byte) varlena header. */
static inline ActivePg__Expr *
E_strn(int kind, const char *s, size_t n)
{
	unsigned char buf[128];

	if (n + 1 >= sizeof(buf))
		n = sizeof(buf) - 2;	/* tests use short strings; never overrun */
	buf[0] = (unsigned char) (((n + 1) << 1) | 1);
	memcpy(buf + 1, s, n);
	return E_const(kind, buf, n + 1, false);
}

/* Text-like constant of a C string. */
static inline ActivePg__Expr *
E_str(int kind, const char *s)
{
	return E_strn(kind, s, strlen(s));
}

/* Expr: AND/OR/NOT (AP_BOOL_*) of n arguments. */
static inline ActivePg__Expr *
E_boolexpr(int kind, int n, ActivePg__Expr **args)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__BoolExpr *b = talloc(sizeof(*b));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__BoolExpr binit = ACTIVE_PG__BOOL_EXPR__INIT;

	*e = einit;
	*b = binit;
	b->kind = (uint32_t) kind;
	b->n_args = (size_t) n;
	b->args = talloc((n > 0 ? n : 1) * sizeof(ActivePg__Expr *));
	for (int i = 0; i < n; i++)
		b->args[i] = args[i];
	e->node_case = ACTIVE_PG__EXPR__NODE_BOOL_EXPR;
	e->bool_expr = b;
	return e;
}

/* Expr: COALESCE of n arguments. */
static inline ActivePg__Expr *
COAL(int rkind, int n, ActivePg__Expr **args)
{
	ActivePg__Expr *e = talloc(sizeof(*e));
	ActivePg__CoalesceExpr *ce = talloc(sizeof(*ce));
	ActivePg__Expr einit = ACTIVE_PG__EXPR__INIT;
	ActivePg__CoalesceExpr cinit = ACTIVE_PG__COALESCE_EXPR__INIT;

	*e = einit;
	*ce = cinit;
	ce->n_args = (size_t) n;
	ce->args = talloc(n * sizeof(ActivePg__Expr *));
	memcpy(ce->args, args, n * sizeof(ActivePg__Expr *));
	ce->result_kind = (uint32_t) rkind;
	e->node_case = ACTIVE_PG__EXPR__NODE_COALESCE;
	e->coalesce = ce;
	return e;
}

/* Expr: COALESCE of one argument (the same value, never specialised by the VM). */
static inline ActivePg__Expr *
COAL1(int rkind, ActivePg__Expr *arg)
{
	return COAL(rkind, 1, &arg);
}

#endif							/* DISKD_TEST_EXPRBUILD_H */
