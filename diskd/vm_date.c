/*
 * vm_date.c
 *	  The VM's dates and timestamps: date arithmetic, casts, EXTRACT /
 *	  date_part and date_trunc, as PostgreSQL 15 computes them.
 *
 * Rules of this file:
 *  - Calendar arithmetic is the proleptic Gregorian Julian-day conversion
 *    PostgreSQL uses (date2j/j2date): dates are days since 2000-01-01,
 *    timestamps microseconds since 2000-01-01 00:00, both without time zone.
 *    timestamptz is never decomposed here: its fields depend on the
 *    session's TimeZone, which the disk does not know.
 *  - Results outside PostgreSQL's date or timestamp range, and units a type
 *    does not support (hour of a date in EXTRACT), are errors there and
 *    AP_EV_FALLBACK here.
 *  - Infinite inputs follow PostgreSQL 14+: date +/- n keeps the infinity,
 *    date - date is an error; EXTRACT of year or epoch gives +/-Infinity,
 *    other fields NULL; date_trunc returns the infinity unchanged.
 *  - EXTRACT returns numeric (scale 0, or 6 for second and timestamp
 *    epoch), date_part float8 computed with PostgreSQL's float expressions.
 */
#include <math.h>
#include <string.h>

#include "vm_internal.h"

#define UNIX_EPOCH_JDATE		2440588
#define SECS_PER_DAY			86400
/* SetEpochTimestamp(): 1970-01-01 in microseconds since 2000-01-01 */
#define EPOCH_TS				(-INT64_C(946684800000000))

/* Julian day number of a Gregorian (proleptic) year/month/day. */
static int
date2j(int y, int m, int d)
{
	int			julian;
	int			century;

	/* count from March so the leap day is the year's last day */
	if (m > 2)
	{
		m += 1;
		y += 4800;
	}
	else
	{
		m += 13;
		y += 4799;
	}
	century = y / 100;
	julian = y * 365 - 32167;
	julian += y / 4 - century + century / 4;
	julian += 7834 * m / 256 + d;
	return julian;
}

/* Year/month/day of a Julian day number (>= 0). */
static void
j2date(int jd, int *year, int *month, int *day)
{
	unsigned int julian = (unsigned int) jd + 32044;
	unsigned int quad = julian / 146097;
	unsigned int extra = (julian - quad * 146097) * 4 + 3;
	int			y;

	julian += 60 + quad * 3 + extra / 146097;
	quad = julian / 1461;
	julian -= quad * 1461;
	y = (int) (julian * 4 / 1461);
	julian = ((y != 0) ? ((julian + 305) % 365) : ((julian + 306) % 366)) + 123;
	y += (int) quad * 4;
	*year = y - 4800;
	quad = julian * 2141 / 65536;
	*day = (int) (julian - 7834 * quad / 256);
	*month = (int) ((quad + 10) % 12 + 1);
}

/* Day of the week of a Julian day: 0 = Sunday. */
static int
j2day(int jd)
{
	int			d = (jd + 1) % 7;

	return d < 0 ? d + 7 : d;
}

/* ISO 8601 week number of a date (date2isoweek). */
static int
iso_week(int y, int m, int d)
{
	int			dayn = date2j(y, m, d);
	int			day4 = date2j(y, 1, 4);
	int			day0 = j2day(day4 - 1);
	int			week;

	/* week 1 is the one holding the year's first Thursday (Jan 4) */
	if (dayn < day4 - day0)
	{
		day4 = date2j(y - 1, 1, 4);
		day0 = j2day(day4 - 1);
	}
	week = (dayn - (day4 - day0)) / 7 + 1;
	/* the year's last days may belong to week 1 of the next year */
	if (week >= 52)
	{
		day4 = date2j(y + 1, 1, 4);
		day0 = j2day(day4 - 1);
		if (dayn >= day4 - day0)
			week = (dayn - (day4 - day0)) / 7 + 1;
	}
	return week;
}

/* floor(a / b) for b > 0. */
static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t		q = a / b;

	return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* date2timestamp(): infinities map over; beyond timestamp range is an error. */
bool
ap_vm_date_to_ts(int32_t days, int64_t *ts)
{
	if (days == AP_DATE_NOBEGIN)
		*ts = AP_TS_NOBEGIN;
	else if (days == AP_DATE_NOEND)
		*ts = AP_TS_NOEND;
	else if (days >= AP_TS_END_DAYS || days < AP_DATE_MIN_DAYS)
		return false;
	else
		*ts = (int64_t) days * AP_USECS_PER_DAY;
	return true;
}

/* timestamp_date(): the day a timestamp falls on; infinities map over. */
bool
ap_vm_ts_to_date(int64_t ts, int32_t *days)
{
	int64_t		d;

	if (ts == AP_TS_NOBEGIN)
		*days = AP_DATE_NOBEGIN;
	else if (ts == AP_TS_NOEND)
		*days = AP_DATE_NOEND;
	else
	{
		d = floor_div(ts, AP_USECS_PER_DAY);
		if (d < AP_DATE_MIN_DAYS || d >= AP_DATE_END_DAYS)
			return false;
		*days = (int32_t) d;
	}
	return true;
}

/* date + int, int + date, date - int, date - date. */
ApEv
ap_vm_date_arith(int fn, int rkind, const ApVal *a, const ApVal *b, ApVal *out)
{
	int64_t		d,
				n,
				r;

	out->kind = (uint8_t) rkind;
	if (a->kind == AP_TYPE_DATE && b->kind == AP_TYPE_DATE)
	{
		/* date_mi: "cannot subtract infinite dates" */
		if (a->u.i == AP_DATE_NOBEGIN || a->u.i == AP_DATE_NOEND ||
			b->u.i == AP_DATE_NOBEGIN || b->u.i == AP_DATE_NOEND)
			return AP_EV_FALLBACK;
		out->u.i = a->u.i - b->u.i;
		return AP_EV_VALUE;
	}
	d = a->kind == AP_TYPE_DATE ? a->u.i : b->u.i;
	n = a->kind == AP_TYPE_DATE ? b->u.i : a->u.i;
	if (d == AP_DATE_NOBEGIN || d == AP_DATE_NOEND)
	{
		out->u.i = d;			/* an infinity does not move */
		return AP_EV_VALUE;
	}
	r = fn == AP_FN_SUB ? d - n : d + n;
	if (r < AP_DATE_MIN_DAYS || r >= AP_DATE_END_DAYS)
		return AP_EV_FALLBACK;	/* "date out of range" */
	out->u.i = r;
	return AP_EV_VALUE;
}

/* A numeric result coef * 10^-dscale. */
static ApEv
num_result(ApVal *out, int64_t coef, int dscale)
{
	out->kind = AP_TYPE_NUMERIC;
	out->nform = AP_NF_FIXED;
	out->u.fx.coef = coef;
	out->u.fx.dscale = dscale;
	return AP_EV_VALUE;
}

/* EXTRACT/date_part of an infinite input: year and epoch +/-inf, others NULL. */
static ApEv
extract_infinite(int field, int rkind, bool negative, ApVal *out)
{
	if (field != AP_FIELD_YEAR && field != AP_FIELD_EPOCH)
		return AP_EV_NULL;
	if (rkind == AP_TYPE_FLOAT8)
		out->u.f8 = negative ? -INFINITY : INFINITY;
	else
	{
		out->nform = AP_NF_SPECIAL;
		out->special = (uint8_t) (negative ? AP_NUM_NINF : AP_NUM_PINF);
	}
	return AP_EV_VALUE;
}

/* The calendar fields of a Julian day common to dates and timestamps. */
static bool
day_field(int field, int jd, int64_t *r)
{
	int			y,
				m,
				d;

	j2date(jd, &y, &m, &d);
	switch (field)
	{
		case AP_FIELD_YEAR:
			*r = y > 0 ? y : y - 1;	/* there is no year 0 */
			return true;
		case AP_FIELD_QUARTER:
			*r = (m - 1) / 3 + 1;
			return true;
		case AP_FIELD_MONTH:
			*r = m;
			return true;
		case AP_FIELD_DAY:
			*r = d;
			return true;
		case AP_FIELD_DOW:
			*r = j2day(jd);
			return true;
		case AP_FIELD_DOY:
			*r = date2j(y, m, d) - date2j(y, 1, 1) + 1;
			return true;
		case AP_FIELD_WEEK:
			*r = iso_week(y, m, d);
			return true;
		default:
			return false;
	}
}

/* extract(field from date) (extract_date): integer numerics, no time fields. */
static ApEv
extract_date(int field, int32_t date, ApVal *out)
{
	int64_t		r;

	if (date == AP_DATE_NOBEGIN || date == AP_DATE_NOEND)
	{
		if (field == AP_FIELD_HOUR || field == AP_FIELD_MINUTE || field == AP_FIELD_SECOND)
			return AP_EV_FALLBACK;	/* unit not supported for type date */
		return extract_infinite(field, AP_TYPE_NUMERIC, date == AP_DATE_NOBEGIN, out);
	}
	if (date < AP_DATE_MIN_DAYS)
		return AP_EV_FALLBACK;	/* not a valid date: j2date needs jd >= 0 */
	if (field == AP_FIELD_EPOCH)
		return num_result(out, ((int64_t) date + AP_POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
						  SECS_PER_DAY, 0);
	if (!day_field(field, date + AP_POSTGRES_EPOCH_JDATE, &r))
		return AP_EV_FALLBACK;
	return num_result(out, r, 0);
}

/* Split a finite timestamp into Julian day and microseconds of the day. */
static bool
ts_split(int64_t ts, int *jd, int64_t *time)
{
	int64_t		days = floor_div(ts, AP_USECS_PER_DAY);

	/* ts mod a day, not ts - days * day: near INT64_MIN that product overflows */
	*time = ts % AP_USECS_PER_DAY;
	if (*time < 0)
		*time += AP_USECS_PER_DAY;
	days += AP_POSTGRES_EPOCH_JDATE;
	if (days < 0 || days > INT32_MAX)
		return false;			/* "timestamp out of range" */
	*jd = (int) days;
	return true;
}

/* timestamp_part_common(): numeric (extract) or float8 (date_part). */
static ApEv
extract_ts(int field, int rkind, int64_t ts, ApVal *out)
{
	bool		numeric = rkind == AP_TYPE_NUMERIC;
	int64_t		time,
				r;
	int			jd;

	if (ts == AP_TS_NOBEGIN || ts == AP_TS_NOEND)
		return extract_infinite(field, rkind, ts == AP_TS_NOBEGIN, out);
	if (field == AP_FIELD_EPOCH)
	{
		bool		fits = ts < INT64_MAX + EPOCH_TS;

		if (numeric)
			return fits ? num_result(out, ts - EPOCH_TS, 6) : AP_EV_FALLBACK;
		/* the subtraction in int64 where it fits avoids precision loss */
		out->u.f8 = fits ? (double) (ts - EPOCH_TS) / 1000000.0 :
			((double) ts - EPOCH_TS) / 1000000.0;
		return AP_EV_VALUE;
	}
	if (!ts_split(ts, &jd, &time))
		return AP_EV_FALLBACK;
	switch (field)
	{
		case AP_FIELD_HOUR:
			r = time / AP_USECS_PER_HOUR;
			break;
		case AP_FIELD_MINUTE:
			r = time % AP_USECS_PER_HOUR / AP_USECS_PER_MINUTE;
			break;
		case AP_FIELD_SECOND:
			{
				int64_t		usec = time % AP_USECS_PER_MINUTE;

				if (numeric)
					return num_result(out, usec, 6);
				/* tm_sec + fsec / 1000000.0 */
				out->u.f8 = (double) (usec / AP_USECS_PER_SEC) +
					(double) (usec % AP_USECS_PER_SEC) / 1000000.0;
				return AP_EV_VALUE;
			}
		default:
			if (!day_field(field, jd, &r))
				return AP_EV_FALLBACK;
			break;
	}
	if (numeric)
		return num_result(out, r, 0);
	out->u.f8 = (double) r;
	return AP_EV_VALUE;
}

/* EXTRACT(field FROM date|timestamp) and date_part. */
ApEv
ap_vm_extract(int field, int rkind, const ApVal *a, ApVal *out)
{
	out->kind = (uint8_t) rkind;
	if (a->kind == AP_TYPE_DATE)
	{
		int64_t		ts;

		if (rkind == AP_TYPE_NUMERIC)
			return extract_date(field, (int32_t) a->u.i, out);
		/* date_part(text, date) is date_part(text, date::timestamp) */
		if (!ap_vm_date_to_ts((int32_t) a->u.i, &ts))
			return AP_EV_FALLBACK;
		return extract_ts(field, rkind, ts, out);
	}
	return extract_ts(field, rkind, a->u.i, out);
}

/* date_trunc(field, timestamp) (timestamp_trunc). */
ApEv
ap_vm_date_trunc(int field, const ApVal *a, ApVal *out)
{
	int64_t		ts = a->u.i,
				time,
				r;
	int			jd,
				y,
				m,
				d;

	out->kind = AP_TYPE_TIMESTAMP;
	if (ts == AP_TS_NOBEGIN || ts == AP_TS_NOEND)
	{
		out->u.i = ts;
		return AP_EV_VALUE;
	}
	if (!ts_split(ts, &jd, &time))
		return AP_EV_FALLBACK;
	j2date(jd, &y, &m, &d);
	switch (field)
	{
		case AP_FIELD_WEEK:
			/* the Monday starting the ISO week */
			jd -= (j2day(jd) + 6) % 7;
			time = 0;
			break;
		case AP_FIELD_YEAR:
		case AP_FIELD_QUARTER:
		case AP_FIELD_MONTH:
			if (field == AP_FIELD_YEAR)
				m = 1;
			else if (field == AP_FIELD_QUARTER)
				m = 3 * ((m - 1) / 3) + 1;
			jd = date2j(y, m, 1);
			time = 0;
			break;
		case AP_FIELD_DAY:
			time = 0;
			break;
		case AP_FIELD_HOUR:
			time -= time % AP_USECS_PER_HOUR;
			break;
		case AP_FIELD_MINUTE:
			time -= time % AP_USECS_PER_MINUTE;
			break;
		case AP_FIELD_SECOND:
			time -= time % AP_USECS_PER_SEC;
			break;
		default:
			return AP_EV_FALLBACK;
	}
	r = ((int64_t) jd - AP_POSTGRES_EPOCH_JDATE) * AP_USECS_PER_DAY + time;
	if (r < AP_TS_MIN || r >= AP_TS_END)
		return AP_EV_FALLBACK;	/* "timestamp out of range" */
	out->u.i = r;
	return AP_EV_VALUE;
}
