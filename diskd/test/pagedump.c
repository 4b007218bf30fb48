/*
 * pagedump.c
 *	  Decode heap pages written by a real server with diskd's core layers.
 *
 *	  pagedump [-k] FILE TYPESPEC
 *
 * FILE is a relation segment (or any file of concatenated 8 kB pages, block
 * numbers counted from 0 at the start of the file); TYPESPEC lists the
 * columns, e.g. "int4,text,numeric".  For every LP_NORMAL tuple one line:
 *
 *	  blk/off|col1|col2|...
 *
 * NULL is \N; ints decimal; float4 "%.9g", float8 "%.17g" (NaN, Infinity,
 * -Infinity as PostgreSQL spells them); numeric exactly as numeric_out;
 * date as days since 2000-01-01; timestamp(tz) as microseconds since
 * 2000-01-01; text/varchar/bpchar verbatim (pglz decompressed; external
 * values print <toast>, other undecodable values <fallback>); bool t/f.
 * A tuple that cannot be deformed prints "blk/off|<fallback>".  Visibility
 * is not considered: dead tuples print too.
 *
 * With -k checksums are verified; failing or structurally bad pages are
 * reported on stderr as "blk: BAD" and make the exit status 1.
 *
 * Rules of this file: a test tool, but exact: it must print what PostgreSQL
 * prints for the same value, so TAP tests can compare the two.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskd.h"

/* Column type names pagedump understands. */
static const struct
{
	const char *name;
	int16_t		attlen;
	char		attalign;
	uint8_t		kind;
}			type_table[] = {
	{"bool", 1, 'c', AP_TYPE_BOOL},
	{"int2", 2, 's', AP_TYPE_INT2},
	{"int4", 4, 'i', AP_TYPE_INT4},
	{"int8", 8, 'd', AP_TYPE_INT8},
	{"float4", 4, 'i', AP_TYPE_FLOAT4},
	{"float8", 8, 'd', AP_TYPE_FLOAT8},
	{"numeric", -1, 'i', AP_TYPE_NUMERIC},
	{"date", 4, 'i', AP_TYPE_DATE},
	{"timestamp", 8, 'd', AP_TYPE_TIMESTAMP},
	{"timestamptz", 8, 'd', AP_TYPE_TIMESTAMPTZ},
	{"text", -1, 'i', AP_TYPE_TEXT},
	{"varchar", -1, 'i', AP_TYPE_VARCHAR},
	{"bpchar", -1, 'i', AP_TYPE_BPCHAR},
};

/* Scratch for pglz: an inline value decompresses to at most ~1 MB. */
#define DECOMP_CAP	(4u * 1024u * 1024u)
static unsigned char *decomp;

/* Parse "a,b,c" into a descriptor; exits on an unknown name. */
static void
parse_typespec(const char *spec, ApTupleDesc *desc)
{
	char	   *copy = strdup(spec);
	char	   *save = NULL;
	int			n = 1;

	for (const char *p = spec; *p; p++)
		if (*p == ',')
			n++;
	desc->cols = calloc(n, sizeof(ApColumn));
	desc->natts = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		size_t		i;

		for (i = 0; i < sizeof(type_table) / sizeof(type_table[0]); i++)
			if (strcmp(tok, type_table[i].name) == 0)
				break;
		if (i == sizeof(type_table) / sizeof(type_table[0]))
		{
			fprintf(stderr, "pagedump: unknown type \"%s\"\n", tok);
			exit(2);
		}
		desc->cols[desc->natts].attlen = type_table[i].attlen;
		desc->cols[desc->natts].attalign = type_table[i].attalign;
		desc->cols[desc->natts].attbyval = type_table[i].attlen > 0;
		desc->cols[desc->natts].type_kind = type_table[i].kind;
		desc->natts++;
	}
	free(copy);
}

/* Print a double the way PostgreSQL spells non-finite values. */
static void
print_float(double d, int digits)
{
	if (isnan(d))
		fputs("NaN", stdout);
	else if (isinf(d))
		fputs(d > 0 ? "Infinity" : "-Infinity", stdout);
	else
		printf("%.*g", digits, d);
}

/* numeric_out(): integer digits, then exactly dscale fractional digits. */
static void
print_numeric(const ApNumeric *n)
{
	int			d;

	if (n->special == AP_NUM_NAN)
	{
		fputs("NaN", stdout);
		return;
	}
	if (n->special == AP_NUM_PINF || n->special == AP_NUM_NINF)
	{
		fputs(n->special == AP_NUM_PINF ? "Infinity" : "-Infinity", stdout);
		return;
	}
	if (n->negative)
		putchar('-');
	if (n->weight < 0)
		putchar('0');
	for (d = 0; d <= n->weight; d++)
	{
		int16_t		dig = 0;

		if (d < n->ndigits)
			memcpy(&dig, n->digits + 2 * d, 2);
		printf(d == 0 ? "%d" : "%04d", dig);
	}
	if (n->dscale > 0)
	{
		int			printed = 0;

		putchar('.');
		for (d = n->weight + 1; printed < n->dscale; d++)
		{
			int16_t		dig = 0;
			char		buf[8];

			if (d >= 0 && d < n->ndigits)
				memcpy(&dig, n->digits + 2 * d, 2);
			snprintf(buf, sizeof(buf), "%04d", dig);
			for (int k = 0; k < 4 && printed < n->dscale; k++, printed++)
				putchar(buf[k]);
		}
	}
}

/* Render one non-null value of column col. */
static void
print_value(const ApColumn *col, const ApValue *v)
{
	const unsigned char *p = v->ptr;

	switch (col->type_kind)
	{
		case AP_TYPE_BOOL:
			putchar(p[0] ? 't' : 'f');
			return;
		case AP_TYPE_INT2:
			{
				int16_t		x;

				memcpy(&x, p, 2);
				printf("%d", x);
				return;
			}
		case AP_TYPE_INT4:
		case AP_TYPE_DATE:
			{
				int32_t		x;

				memcpy(&x, p, 4);
				printf("%d", x);
				return;
			}
		case AP_TYPE_INT8:
		case AP_TYPE_TIMESTAMP:
		case AP_TYPE_TIMESTAMPTZ:
			{
				int64_t		x;

				memcpy(&x, p, 8);
				printf("%lld", (long long) x);
				return;
			}
		case AP_TYPE_FLOAT4:
			{
				float		f;

				memcpy(&f, p, 4);
				print_float(f, 9);
				return;
			}
		case AP_TYPE_FLOAT8:
			{
				double		f;

				memcpy(&f, p, 8);
				print_float(f, 17);
				return;
			}
		default:
			break;
	}

	/* varlena kinds */
	{
		const unsigned char *data;
		uint32_t	len;

		if (ap_varlena_is_external(p))
		{
			fputs("<toast>", stdout);
			return;
		}
		if (ap_varlena_payload(p, decomp, DECOMP_CAP, &data, &len) != AP_OK)
		{
			fputs("<fallback>", stdout);
			return;
		}
		if (col->type_kind == AP_TYPE_NUMERIC)
		{
			ApNumeric	n;

			if (ap_numeric_decode(data, len, &n) != AP_OK)
				fputs("<fallback>", stdout);
			else
				print_numeric(&n);
			return;
		}
		fwrite(data, 1, len, stdout);
	}
}

/* Dump every LP_NORMAL tuple of one page. */
static void
dump_page(const unsigned char *page, uint32_t blk, const ApTupleDesc *desc,
		  ApValue *values)
{
	int			nitems = ap_page_nitems(page);

	for (int off = 1; off <= nitems; off++)
	{
		unsigned	flags,
					lpoff,
					lplen;
		ApTupleHeader hdr;
		const unsigned char *tup;

		ap_page_item(page, off, &flags, &lpoff, &lplen);
		if (flags != AP_LP_NORMAL)
			continue;
		tup = page + lpoff;
		printf("%u/%d", blk, off);
		if (ap_tuple_header(tup, lplen, &hdr) != AP_OK ||
			ap_tuple_deform(desc, tup, lplen, &hdr, desc->natts, values) != AP_OK)
		{
			fputs("|<fallback>\n", stdout);
			continue;
		}
		for (int i = 0; i < desc->natts; i++)
		{
			putchar('|');
			if (values[i].isnull)
				fputs("\\N", stdout);
			else
				print_value(&desc->cols[i], &values[i]);
		}
		putchar('\n');
	}
}

/* Read the file page by page and dump it. */
int
main(int argc, char **argv)
{
	bool		checksums = false;
	int			argi = 1;
	FILE	   *f;
	ApTupleDesc desc;
	ApValue    *values;
	unsigned char *page;
	uint32_t	blk = 0;
	int			status = 0;

	if (argc > 1 && strcmp(argv[1], "-k") == 0)
	{
		checksums = true;
		argi++;
	}
	if (argc - argi != 2)
	{
		fprintf(stderr, "usage: pagedump [-k] FILE TYPESPEC\n");
		return 2;
	}
	parse_typespec(argv[argi + 1], &desc);
	ap_tupdesc_cache_offsets(&desc);
	values = calloc(desc.natts > 0 ? desc.natts : 1, sizeof(ApValue));
	page = malloc(AP_BLCKSZ);
	decomp = malloc(DECOMP_CAP);
	if (!values || !page || !decomp)
	{
		fprintf(stderr, "pagedump: out of memory\n");
		return 2;
	}
	f = fopen(argv[argi], "rb");
	if (f == NULL)
	{
		fprintf(stderr, "pagedump: %s: %s\n", argv[argi], strerror(errno));
		return 2;
	}

	while (fread(page, 1, AP_BLCKSZ, f) == AP_BLCKSZ)
	{
		ApPageStatus st = ap_page_check(page, blk, checksums);

		if (st == AP_PAGE_BAD)
		{
			fprintf(stderr, "%u: BAD\n", blk);
			status = 1;
		}
		else if (st == AP_PAGE_OK)
			dump_page(page, blk, &desc, values);
		blk++;
	}
	fclose(f);
	free(page);
	free(values);
	free(decomp);
	free(desc.cols);
	return status;
}
