/*
 * ap_stripe.h
 *	  The striping rule both programs follow.
 *
 * A relation's main fork is cut into stripe units of stripe_pages blocks
 * (the last one may be partial); unit u belongs to disk u mod ndisks, as
 * in RAID 0.  The host decides what each disk reads and which blocks it
 * must read itself for a disk that failed; the disk reads exactly its
 * units.  Both sides compute it here.
 */
#ifndef AP_STRIPE_H
#define AP_STRIPE_H

#include <stdint.h>

/* Stripe units of a relation of nblocks blocks. */
static inline uint64_t
ap_stripe_nunits(uint64_t nblocks, uint32_t stripe_pages)
{
	return (nblocks + stripe_pages - 1) / stripe_pages;
}

/* The disk that owns block blk. */
static inline uint32_t
ap_stripe_disk_of_block(uint64_t blk, uint32_t stripe_pages, uint32_t ndisks)
{
	return (uint32_t) ((blk / stripe_pages) % ndisks);
}

/* Stripe units disk owns of a relation of nblocks blocks. */
static inline uint64_t
ap_stripe_disk_units(uint64_t nblocks, uint32_t stripe_pages, uint32_t ndisks, uint32_t disk)
{
	uint64_t	nunits = ap_stripe_nunits(nblocks, stripe_pages);

	if (ndisks == 0 || disk >= nunits)
		return 0;
	return (nunits - 1 - disk) / ndisks + 1;
}

/* Blocks disk owns of a relation of nblocks blocks (the last unit may be partial). */
static inline uint64_t
ap_stripe_disk_blocks(uint64_t nblocks, uint32_t stripe_pages, uint32_t ndisks, uint32_t disk)
{
	uint64_t	nunits = ap_stripe_nunits(nblocks, stripe_pages);
	uint64_t	blocks = ap_stripe_disk_units(nblocks, stripe_pages, ndisks, disk) * stripe_pages;

	if (blocks > 0 && (nunits - 1) % ndisks == disk)
		blocks -= nunits * stripe_pages - nblocks;
	return blocks;
}

#endif							/* AP_STRIPE_H */
