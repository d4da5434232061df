/* SPDX-License-Identifier: MIT */
/* pages.h — fresh memory in bulk.
 *
 * Every fresh page of a big array costs a page fault on first write: on these VMs about 1.7 µs
 * each (memcg accounting included), which for a million-op plan (140 MB, 35k pages) is more than
 * writing the ops. Asking the kernel to populate a whole run of pages in one call
 * (MADV_POPULATE_WRITE, Linux 5.14) saves the per-fault entry and exit. */
#ifndef MEMLIFE_PAGES_H
#define MEMLIFE_PAGES_H

#include <stddef.h>

/* Populates the whole pages inside [begin, end) for writing. Only a hint: where the kernel or
 * the C library cannot, nothing happens and the pages fault in one by one as before. Use it on
 * memory about to be written anyway, never ahead of what will be used (it costs RSS). */
void ml_prefault(void *begin, void *end);

#endif
