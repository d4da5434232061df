/* SPDX-License-Identifier: MIT */
/* nvtx.h — NVTX ranges around the benchmark's plans and regions, so that Nsight Systems users see
 * them on the timeline (nsys ... --trace=cuda,nvtx; `nvtx_kern_sum` then counts the kernels of
 * each range, the chapter's method). Header-only nvtx3 from the CUDA toolkit, default domain, so
 * a region named "direct" shows as ":direct" exactly as in the chapter's probe. Without CUDA the
 * calls do nothing; with no tool attached each costs a branch. */
#ifndef MEMLIFE_NVTX_H
#define MEMLIFE_NVTX_H

void rt_nvtx_push(const char *name);
void rt_nvtx_pop(void);

#endif
