/*
 * testutil.h
 *	  Minimal assertion macros for diskd's C unit tests.
 *
 * Rules of this file:
 *  - A failed check prints file:line and the expression, counts the failure
 *    and carries on, so one run shows every broken case.
 *  - TEST_DONE() prints a summary and yields the process exit status:
 *    nonzero if anything failed, so `make check` fails.
 */
#ifndef DISKD_TESTUTIL_H
#define DISKD_TESTUTIL_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int	test_checks;
static int	test_failures;

#define CHECK(cond) \
	do { \
		test_checks++; \
		if (!(cond)) \
		{ \
			test_failures++; \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
		} \
	} while (0)

#define CHECK_EQ(a, b) \
	do { \
		long long	_a = (long long) (a); \
		long long	_b = (long long) (b); \
		test_checks++; \
		if (_a != _b) \
		{ \
			test_failures++; \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
					__FILE__, __LINE__, #a, _a, #b, _b); \
		} \
	} while (0)

#define CHECK_MEM(a, b, n) \
	do { \
		test_checks++; \
		if (memcmp((a), (b), (n)) != 0) \
		{ \
			test_failures++; \
			fprintf(stderr, "%s:%d: CHECK_MEM failed: %s vs %s (%zu bytes)\n", \
					__FILE__, __LINE__, #a, #b, (size_t) (n)); \
		} \
	} while (0)

#define TEST_DONE() \
	(fprintf(stderr, "%d checks, %d failures\n", test_checks, test_failures), \
	 test_failures == 0 ? 0 : 1)

#endif							/* DISKD_TESTUTIL_H */
