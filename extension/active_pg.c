/*
 * active_pg.c
 *	  Module entry point: _PG_init only calls each module's init.
 *
 * The launcher (background worker) can only be registered while
 * shared_preload_libraries is being processed.  A library loaded later (by
 * CREATE EXTENSION or LOAD) still defines the GUCs, planner hooks and the
 * ActiveScan node; it then only has the disks of active_pg.disks, and
 * ApDisksConfigured() (diskaddr.c) reports whether there are any.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "active_pg.h"
#include "activeagg.h"
#include "bloomjoin.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Library load: define GUCs, install hooks and methods, register the launcher. */
void
_PG_init(void)
{
	ApGucInit();
	ApPlannerInit();
	ApExecInit();
	ApAggPlannerInit();
	ApBloomPlannerInit();
	if (process_shared_preload_libraries_in_progress)
	{
		ApStatsShmemRequest();
		ApBloomShmemRequest();
		ApLauncherRegister();
	}
}
