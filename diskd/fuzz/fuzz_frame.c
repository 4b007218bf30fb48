/*
 * fuzz_frame.c
 *	  libFuzzer target: a frame as a daemon receives it (the bytes after the
 *	  length).  The shape check that runs before unpacking, protobuf-c's
 *	  unpacking within the bound it allows, and for a ScanRequest the
 *	  compilation of its program (filter, projections, the checks of every
 *	  attribute, operator, function and constant) and its evaluation on a
 *	  few tuples of the seed table's shape.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ap_frame_check.h"
#include "fuzz_common.h"

/* A tuple of fuzz_desc's first three columns, nulls for the rest. */
static void
fuzz_values(ApValue *v, int r)
{
	static unsigned char ints[2][4];
	static unsigned char text[2][12] = {{0x0b, 'a', 'b', 'c'}, {0x03, 'x'}};

	memset(v, 0, sizeof(ApValue) * FUZZ_NCOLS);
	memcpy(ints[0], &r, 4);
	memcpy(ints[1], &(int) {r * 7 - 3}, 4);
	v[0] = (ApValue) {ints[0], 4, false};
	v[1] = (ApValue) {ints[1], 4, false};
	v[2] = (ApValue) {text[r & 1], r & 1 ? 1 : 5, false};
	for (int i = 3; i < FUZZ_NCOLS; i++)
		v[i].isnull = true;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint64_t	unpacked = 0;
	char		err[256];
	ActivePg__Frame *f;

	if (len == 0 || len > AP_FRAME_MAX_BYTES)
		return 0;
	if (ap_frame_check(data, len, AP_FRAME_MAX_DEPTH, &unpacked, err, sizeof(err)) < 0)
		return 0;
	if (unpacked > AP_UNPACK_MIN_BYTES && unpacked > (uint64_t) len * AP_UNPACK_FACTOR)
		return 0;
	f = active_pg__frame__unpack(NULL, len, data);
	if (f == NULL)
		return 0;
	if (f->msg_case == ACTIVE_PG__FRAME__MSG_SCAN && f->scan->program != NULL)
	{
		ApProgram	prog;

		if (fuzz_desc.ncached == 0)
			ap_tupdesc_cache_offsets(&fuzz_desc);
		if (ap_program_compile(f->scan->program, &fuzz_desc, &prog) == 0)
		{
			ApValue		v[FUZZ_NCOLS];
			ApValue    *out = calloc(prog.nexprs + 1, sizeof(ApValue));

			for (int r = 0; r < 4 && out != NULL; r++)
			{
				fuzz_values(v, r);
				if (prog.filter != NULL)
					(void) ap_program_filter(&prog, v);
				if (prog.nexprs > 0)
					(void) ap_program_project(&prog, v, out);
			}
			free(out);
			ap_program_free(&prog);
		}
	}
	active_pg__frame__free_unpacked(f, NULL);
	return 0;
}
