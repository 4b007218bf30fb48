/*
 * ap_frame_check.h
 *	  Bound a received frame's shape before unpacking it (ap_frame_check.c).
 */
#ifndef AP_FRAME_CHECK_H
#define AP_FRAME_CHECK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Messages may nest this deep in a frame: Frame > Scan > Program > Expr, and
 * two levels (Expr and its node) per expression level up to the compiler's
 * AP_MAX_EXPR_DEPTH (200), with room to spare.
 */
#define AP_FRAME_MAX_DEPTH			440

/*
 * What unpacking one frame may allocate, on either side: protobuf-c
 * allocates every message of a frame at once, so a frame of many tiny
 * sub-messages would take many times its size; real frames take a few
 * times theirs.  At most AP_UNPACK_FACTOR times the frame's length, or
 * AP_UNPACK_MIN_BYTES for small frames.
 */
#define AP_UNPACK_FACTOR			16u
#define AP_UNPACK_MIN_BYTES			(1024u * 1024u)

/*
 * Walk an ActivePg.Frame's bytes with the generated descriptors, without
 * recursion: -1 (err filled) if messages nest deeper than max_depth or the
 * framing is broken; else 0 and, if unpacked_bytes is not NULL, an upper
 * estimate of what protobuf-c will allocate to unpack it.
 */
int			ap_frame_check(const uint8_t *buf, size_t len, int max_depth,
						   uint64_t *unpacked_bytes, char *err, size_t errlen);

#endif							/* AP_FRAME_CHECK_H */
