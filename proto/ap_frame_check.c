/*
 * ap_frame_check.c
 *	  Bound a received frame's shape before protobuf-c unpacks it; compiled
 *	  into both programs (diskd and the extension).
 *
 * protobuf-c unpacks nested messages recursively and allocates every
 * message, repeated field and string of a frame at once.  A small hostile
 * frame can therefore exhaust the stack (50 kB of 5000 nested Expr) or
 * memory (16 MB of empty sub-messages unpack to hundreds of MB), and the
 * program's own limits (expression depth, memory budget) are checked only
 * after unpacking.  This walk reads the wire format with the generated
 * descriptors, without recursion and without allocating: it rejects a frame
 * whose messages nest deeper than max_depth, and estimates what unpacking
 * will allocate (each message's struct, each repeated element, each string
 * and bytes field) so the caller can refuse it first.  It is not a full
 * validation: protobuf-c still checks everything it unpacks.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ap_frame_check.h"
#include "active_pg.pb-c.h"

/* Deepest nesting the walk can track; callers pass a smaller max_depth. */
#define AP_FRAME_STACK_MAX		1024

typedef struct FrameLevel
{
	const ProtobufCMessageDescriptor *desc;
	size_t		end;			/* offset where this message's bytes end */
} FrameLevel;

/* Read a base-128 varint at *pos (at most 10 bytes); false if truncated. */
static bool
read_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
	uint64_t	r = 0;

	for (int shift = 0; shift < 70; shift += 7)
	{
		uint8_t		b;

		if (*pos >= len)
			return false;
		b = buf[(*pos)++];
		r |= (uint64_t) (b & 0x7F) << shift;
		if ((b & 0x80) == 0)
		{
			*v = r;
			return true;
		}
	}
	return false;
}

/* Bytes one element of a repeated field takes once unpacked. */
static size_t
element_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type)
	{
		case PROTOBUF_C_TYPE_INT32:
		case PROTOBUF_C_TYPE_SINT32:
		case PROTOBUF_C_TYPE_SFIXED32:
		case PROTOBUF_C_TYPE_UINT32:
		case PROTOBUF_C_TYPE_FIXED32:
		case PROTOBUF_C_TYPE_FLOAT:
		case PROTOBUF_C_TYPE_ENUM:
		case PROTOBUF_C_TYPE_BOOL:
			return 4;
		case PROTOBUF_C_TYPE_BYTES:
			return sizeof(ProtobufCBinaryData);
		default:
			return 8;			/* 64-bit scalars, pointers to strings and messages */
	}
}

static int
fail(char *err, size_t errlen, const char *msg, size_t at)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s (at byte %zu)", msg, at);
	return -1;
}

int
ap_frame_check(const uint8_t *buf, size_t len, int max_depth, uint64_t *unpacked_bytes,
			   char *err, size_t errlen)
{
	FrameLevel	stack[AP_FRAME_STACK_MAX];
	int			depth = 0;
	size_t		pos = 0;
	uint64_t	bytes = active_pg__frame__descriptor.sizeof_message;

	if (max_depth < 1 || max_depth > AP_FRAME_STACK_MAX)
		max_depth = AP_FRAME_STACK_MAX;
	stack[0].desc = &active_pg__frame__descriptor;
	stack[0].end = len;

	for (;;)
	{
		const ProtobufCMessageDescriptor *desc;
		const ProtobufCFieldDescriptor *f;
		uint64_t	key;
		uint64_t	n;
		size_t		at;

		/* leave every message that ends here */
		while (depth > 0 && pos == stack[depth].end)
			depth--;
		if (depth == 0 && pos == len)
			break;
		if (pos > stack[depth].end)
			return fail(err, errlen, "a field runs past the end of its message", pos);

		at = pos;
		desc = stack[depth].desc;
		if (!read_varint(buf, stack[depth].end, &pos, &key) || (key >> 3) == 0 ||
			(key >> 3) > UINT32_MAX)
			return fail(err, errlen, "malformed field key", at);
		f = protobuf_c_message_descriptor_get_field(desc, (unsigned) (key >> 3));

		switch (key & 7)
		{
			case 0:				/* varint */
				if (!read_varint(buf, stack[depth].end, &pos, &n))
					return fail(err, errlen, "truncated varint", at);
				break;
			case 1:				/* 64-bit */
				if (stack[depth].end - pos < 8)
					return fail(err, errlen, "truncated 64-bit field", at);
				pos += 8;
				break;
			case 5:				/* 32-bit */
				if (stack[depth].end - pos < 4)
					return fail(err, errlen, "truncated 32-bit field", at);
				pos += 4;
				break;
			case 2:				/* length-delimited */
				if (!read_varint(buf, stack[depth].end, &pos, &n) ||
					n > stack[depth].end - pos)
					return fail(err, errlen, "length-delimited field runs past its message", at);
				if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE)
				{
					const ProtobufCMessageDescriptor *sub = f->descriptor;

					if (depth + 1 >= max_depth)
						return fail(err, errlen, "messages nested too deeply", at);
					bytes += sub->sizeof_message;
					if (f->label == PROTOBUF_C_LABEL_REPEATED)
						bytes += element_size(f);
					depth++;
					stack[depth].desc = sub;
					stack[depth].end = pos + (size_t) n;
					continue;
				}
				if (f != NULL && f->label == PROTOBUF_C_LABEL_REPEATED &&
					f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_BYTES)
					bytes += n * element_size(f);	/* packed: at most one element a byte */
				else
					bytes += n + 1 + (f != NULL && f->label == PROTOBUF_C_LABEL_REPEATED ?
									  element_size(f) : 0);
				pos += (size_t) n;
				break;
			default:			/* groups (3, 4) are not used by our protocol */
				return fail(err, errlen, "unsupported wire type", at);
		}
		/* an unpacked scalar of a repeated, unpacked field */
		if (f != NULL && f->label == PROTOBUF_C_LABEL_REPEATED && (key & 7) != 2)
			bytes += element_size(f);
	}
	if (unpacked_bytes != NULL)
		*unpacked_bytes = bytes;
	return 0;
}
