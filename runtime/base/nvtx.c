/* SPDX-License-Identifier: MIT */
/* nvtx.c — NVTX ranges (nvtx.h). */
#include "base/nvtx.h"

#ifdef MEMLIFE_HAVE_CUDA

#include <nvtx3/nvToolsExt.h>

void rt_nvtx_push(const char *name) { (void)nvtxRangePushA(name); }
void rt_nvtx_pop(void) { (void)nvtxRangePop(); }

#else

void rt_nvtx_push(const char *name) { (void)name; }
void rt_nvtx_pop(void) {}

#endif
