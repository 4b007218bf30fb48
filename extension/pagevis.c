/*
 * pagevis.c
 *	  diskd's visibility rules (diskd/visibility.c), compiled into the
 *	  extension for the distributed-device mode (pages.c).
 *
 * The host decides the visibility of tuples on page copies the disks ship.
 * PostgreSQL's HeapTupleSatisfiesVisibility needs a shared buffer (it sets
 * hint bits), so the host uses the disk's own three-valued rules instead,
 * answering the xids they ask about with the executor's xid logic.  One
 * source file serves both sides, so the two can never disagree; it is
 * included here rather than listed in OBJS because diskd's Makefile builds
 * diskd/visibility.o with its own flags.
 */
#include "../diskd/visibility.c"
