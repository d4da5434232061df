/* sys_sched.h — the C library's <sched.h>, for files that include <pthread.h> or nvtx3.
 *
 * memlife compiles with -Iruntime, where sched.h is the schedule IR, so the plain <sched.h> that
 * <pthread.h> and nvtx3 include finds ours and cpu_set_t goes missing. This header is found as
 * <sys_sched.h> in that same -I directory, so #include_next continues the search after runtime/
 * and reaches the system's. Include it first; the later <sched.h> lines then see both guards. */
#ifndef MEMLIFE_SYS_SCHED_H
#define MEMLIFE_SYS_SCHED_H
#include_next <sched.h>
#endif
