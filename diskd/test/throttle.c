/*
 * throttle.c
 *	  Unit test of the emulation throttles (diskd/throttle.c): the media-rate
 *	  token bucket and the disk-CPU wait.
 *
 * Two kinds of cases:
 *   - exact ones on a virtual clock (the bucket takes "now" as an argument):
 *     rate, burst, debt shared by concurrent chargers, and the overlap of a
 *     CPU-bound scan with the drive's read-ahead;
 *   - benchmark-style ones on the real clock with generous bounds (a busy
 *     machine may oversleep, never undersleep): 6 MB through a 4 MB/s drive,
 *     once from one thread and once from two threads sharing the daemon's
 *     bucket, must take 1.5 s +-25%; busy-loop work through a 0.5 CPU ratio
 *     must wait about its own CPU time.  The whole test takes about 4 s.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "diskd.h"
#include "testutil.h"

#define MB					(1024.0 * 1024.0)
#define CHUNK_BYTES			(256u * 1024u)	/* one stripe unit of 32 pages */
#define NS					1000000000ull

/* diskd_log is main.c's; the throttles do not log, but keep the link whole. */
int			diskd_disk_id = 0;

/* Logging of the code under test goes to stderr. */
void
diskd_log(const char *level, const char *fmt,...)
{
	(void) level;
	(void) fmt;
}

/* A bucket on the virtual clock at rate MB/s, starting at t = 0. */
static void
bucket_init(ApBucket *b, double mbps)
{
	pthread_mutex_init(&b->lock, NULL);
	ap_bucket_set(b, (uint64_t) (mbps * MB), 0);
}

/* Consume total bytes in chunks as fast as the bucket allows; virtual seconds taken. */
static double
virtual_drain(ApBucket *b, uint64_t total, uint64_t chunk, uint64_t work_ns)
{
	uint64_t	t = 0;

	for (uint64_t done = 0; done < total; done += chunk)
	{
		t += ap_bucket_charge(b, chunk, t) * 1000;
		t += work_ns;			/* the scan's work on the chunk */
	}
	return (double) t / NS;
}

/* Exact rate and burst on the virtual clock. */
static void
test_bucket_virtual(void)
{
	ApBucket	b;
	double		secs;

	/* off: never waits */
	bucket_init(&b, 0);
	CHECK_EQ(ap_bucket_charge(&b, 1u << 30, 0), 0);

	/* 6 MB at 4 MB/s with a 50 ms base burst: (6 - 0.2) / 4 s */
	bucket_init(&b, 4);
	secs = virtual_drain(&b, 6u << 20, CHUNK_BYTES, 0);
	CHECK(secs > 1.449 && secs < 1.451);

	/* after an idle second only one unit of read-ahead is free, not a second's worth */
	CHECK_EQ(ap_bucket_charge(&b, CHUNK_BYTES, (uint64_t) (secs * NS) + NS), 0);
	CHECK(ap_bucket_charge(&b, CHUNK_BYTES, (uint64_t) (secs * NS) + NS) > 60000);

	/*
	 * CPU-bound: 100 ms of work per 256 kB chunk is slower than the 62.5 ms
	 * the media needs, so the media never holds the scan after the first
	 * chunk (the drive read ahead while the CPU worked): time = max, not sum.
	 */
	bucket_init(&b, 4);
	secs = virtual_drain(&b, 6u << 20, CHUNK_BYTES, 100000000ull);
	CHECK(secs > 2.399 && secs < 2.45);

	/* media-bound with some work: the work hides inside the media time */
	bucket_init(&b, 4);
	secs = virtual_drain(&b, 6u << 20, CHUNK_BYTES, 20000000ull);
	CHECK(secs > 1.449 && secs < 1.48);

	/* two chargers at the same instant: the second waits for both chunks */
	bucket_init(&b, 1);
	{
		uint64_t	w1 = ap_bucket_charge(&b, 1u << 20, 0);
		uint64_t	w2 = ap_bucket_charge(&b, 1u << 20, 0);

		CHECK(w1 > 940000 && w1 < 960000);	/* 1 MB less the 50 ms burst */
		CHECK(w2 > 1940000 && w2 < 1960000);
	}

	/* chunks far above a second's worth: the depth stays at one second */
	bucket_init(&b, 1);
	CHECK(ap_bucket_charge(&b, 8u << 20, 100ull * NS) > 6900000);
}

/* The CPU wait formula. */
static void
test_cpu_formula(void)
{
	CHECK_EQ(ap_cpu_wait_us(0.0, 1000000), 0);
	CHECK_EQ(ap_cpu_wait_us(1.0, 1000000), 0);
	CHECK_EQ(ap_cpu_wait_us(1.5, 1000000), 0);
	CHECK_EQ(ap_cpu_wait_us(0.5, 1000000), 1000);
	CHECK_EQ(ap_cpu_wait_us(0.25, 1000000), 3000);
	CHECK_EQ(ap_cpu_wait_us(0.27, 27000000), 73000);
	CHECK_EQ(ap_cpu_wait_us(0.5, 0), 0);
}

/* Seconds of CLOCK_MONOTONIC. */
static double
now_s(void)
{
	return (double) ap_mono_ns() / NS;
}

/* Push bytes in chunks through the daemon's bucket, sleeping as told. */
static void *
pump(void *arg)
{
	uint64_t	total = *(uint64_t *) arg;

	for (uint64_t done = 0; done < total; done += CHUNK_BYTES)
		ap_sleep_us(ap_media_throttle_us(CHUNK_BYTES));
	return NULL;
}

/* Real clock: 6 MB through a 4 MB/s drive, from one thread and from two sharing it. */
static void
test_bucket_real(void)
{
	uint64_t	six = 6u << 20;
	uint64_t	three = 3u << 20;
	pthread_t	t1;
	pthread_t	t2;
	double		t0;
	double		secs;

	ap_throttle_configure(4, 0.0);
	t0 = now_s();
	pump(&six);
	secs = now_s() - t0;
	fprintf(stderr, "media 4 MB/s, 1 reader: 6 MB in %.3f s = %.2f MB/s (expected 1.45 s)\n",
			secs, 6.0 / secs);
	CHECK(secs > 1.5 * 0.75 && secs < 1.5 * 1.25);

	ap_throttle_configure(4, 0.0);
	t0 = now_s();
	pthread_create(&t1, NULL, pump, &three);
	pthread_create(&t2, NULL, pump, &three);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	secs = now_s() - t0;
	fprintf(stderr, "media 4 MB/s, 2 readers sharing the drive: 6 MB in %.3f s = %.2f MB/s\n",
			secs, 6.0 / secs);
	CHECK(secs > 1.5 * 0.75 && secs < 1.5 * 1.25);

	ap_throttle_configure(0, 0.0);
	CHECK_EQ(ap_media_throttle_us(1u << 30), 0);
}

/* Real clock: busy work of known CPU time through a 0.5 ratio waits about that time. */
static void
test_cpu_real(void)
{
	volatile uint64_t sink = 0;
	uint64_t	cpu0;
	uint64_t	cpu;
	uint64_t	wait_us;
	double		t0;
	double		slept;

	ap_throttle_configure(0, 0.5);
	CHECK(ap_cpu_throttle_on());
	cpu0 = ap_thread_cpu_ns();
	while (ap_thread_cpu_ns() - cpu0 < 200000000ull)
	{
		for (int i = 0; i < 10000; i++)
			sink += (uint64_t) i * 2654435761u;
	}
	cpu = ap_thread_cpu_ns() - cpu0;
	wait_us = ap_cpu_throttle_us(cpu);
	t0 = now_s();
	ap_sleep_us(wait_us);
	slept = now_s() - t0;
	fprintf(stderr, "cpu ratio 0.5: %.3f s of CPU, waited %.3f s (expected the CPU time)\n",
			cpu / 1e9, slept);
	/* the wait equals the CPU time (formula), and the sleep lasts at least that */
	CHECK(wait_us * 1000 > cpu * 0.99 && wait_us * 1000 < cpu * 1.01);
	CHECK(slept >= wait_us / 1e6 * 0.999 && slept < wait_us / 1e6 * 1.25 + 0.05);

	ap_throttle_configure(0, 0.0);
	CHECK(!ap_cpu_throttle_on());
	CHECK_EQ(ap_cpu_throttle_us(cpu), 0);
}

int
main(void)
{
	test_bucket_virtual();
	test_cpu_formula();
	test_bucket_real();
	test_cpu_real();
	return TEST_DONE();
}
