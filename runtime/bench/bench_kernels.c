/* SPDX-License-Identifier: MIT */
/* bench_kernels.c — the kernel pass of `memlife bench --kernels` (bench.h, kernels.h): each plan's
 * timed part once more, eagerly, under CUPTI, with a window at its boundaries and at each region's;
 * every rank's counts summed on rank 0. */
#include "bench/bench_int.h"
#include "base/nvtx.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- Kernel pass ----------------------------------------------------------------------------- */

static bench_window *window_get(bench_plan_result *r, const char *label) {
    for (size_t k = 0; k < r->n_windows; k++)
        if (!strcmp(r->windows[k].label, label))
            return &r->windows[k];
    r->windows = ml_xrealloc(r->windows, (r->n_windows + 1) * sizeof *r->windows);
    bench_window *w = &r->windows[r->n_windows++];
    memset(w, 0, sizeof *w);
    w->label = ml_xstrdup(label);
    return w;
}

/* Plan p's timed part once, eagerly, windows at its boundaries and at each region's. */
static int kernel_run(session *ss, size_t p) {
    if (bs_reset(ss, p) != 0 || bs_sync(ss, p) != 0 || bs_line_up(ss, p) != 0)
        return -1;
    ss->windows = true;
    ss->depth = 0;
    uint64_t t0 = kn_now();
    char range[160];
    snprintf(range, sizeof range, "plan:%s (kernels)", ss->plans[p].name);
    rt_nvtx_push(range);
    int rc = bs_run_timed(ss, p);
    if (rc == 0)
        rc = bs_sync(ss, p);
    rt_nvtx_pop();
    ss->windows = false;
    if (rc == 0)
        *(interval *)ml_vec_push(&ss->intervals) = (interval){p, "", t0, kn_now()};
    return rc;
}

/* This process's windows, whole part first, then regions in the order they first opened. */
static void attribute(session *ss, const kn_kernel *ks, size_t n, bench_plan_result *local) {
    for (size_t p = 0; p < ss->n_plans; p++)
        window_get(&local[p], "");
    for (size_t j = 0; j < ss->intervals.n; j++) {
        const interval *iv = &ML_VEC_AT(&ss->intervals, interval, j);
        kn_tally_window(&window_get(&local[iv->plan], iv->label)->tally, ks, n, iv->t0, iv->t1);
    }
}

/* Lines "plan TAB label TAB count TAB name" ('*' for the whole part's empty label; a window
 * without kernels is one line of count 0), for the gather to rank 0. */
static char *windows_text(const bench_plan_result *local, size_t n_plans) {
    ml_str o = {0};
    for (size_t p = 0; p < n_plans; p++)
        for (size_t k = 0; k < local[p].n_windows; k++) {
            const bench_window *w = &local[p].windows[k];
            const char *label = w->label[0] ? w->label : "*";
            if (!w->tally.n_names)
                ml_str_printf(&o, "%zu\t%s\t0\t\n", p, label);
            for (size_t j = 0; j < w->tally.n_names; j++)
                ml_str_printf(&o, "%zu\t%s\t%" PRIu64 "\t%s\n", p, label,
                              w->tally.names[j].count, w->tally.names[j].name);
        }
    if (!o.s)
        ml_str_append(&o, "", 0);
    return o.s;
}

static void merge_text(const char *text, size_t len, bench_plan_result *out, size_t n_plans) {
    const char *at = text, *stop = text + len;
    while (at < stop) {
        const char *nl = memchr(at, '\n', (size_t)(stop - at));
        size_t n = nl ? (size_t)(nl - at) : (size_t)(stop - at);
        char line[1400];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), at);
        at += n + 1;
        char *f[4] = {line, NULL, NULL, NULL};
        for (int k = 1; k < 4 && f[k - 1]; k++) {
            char *tab = strchr(f[k - 1], '\t');
            f[k] = tab ? tab + 1 : NULL;
            if (tab)
                *tab = '\0';
        }
        size_t p = (size_t)strtoull(f[0], NULL, 10);
        if (!f[3] || p >= n_plans)
            continue;
        bench_window *w = window_get(&out[p], strcmp(f[1], "*") ? f[1] : "");
        uint64_t count = strtoull(f[2], NULL, 10);
        if (count)
            kn_tally_add(&w->tally, f[3], count);
    }
}

/* Every rank's windows summed on global rank 0 (in one process: this process's are all). */
static int gather_windows(session *ss, bench_plan_result *local, bench_plan_result *out) {
    bench *b = ss->b;
    char *text = windows_text(local, ss->n_plans);
    int rc = 0;
    if (b->world == b->n_local) {
        merge_text(text, strlen(text), out, ss->n_plans);
    } else {
        void *all = NULL;
        size_t *lens = ml_xcalloc((size_t)b->world, sizeof *lens);
        rc = rt_gather_blobs(ss->plans[0].ptrs[0], text, strlen(text), 0, &all, lens, ss->err,
                             ss->elen);
        size_t at = 0;
        for (int r = 0; rc == 0 && all && r < b->world; r++) {
            merge_text((const char *)all + at, lens[r], out, ss->n_plans);
            at += lens[r];
        }
        free(all);
        free(lens);
    }
    free(text);
    for (size_t p = 0; p < ss->n_plans; p++)
        out[p].kernels_done = rc == 0;
    return rc;
}

/* Whether every rank collects kernels; why says which cannot and why. */
static int agree_on_cupti(session *ss, bool mine_ok, char *why, size_t len) {
    bench *b = ss->b;
    if (b->world == b->n_local)
        return mine_ok ? 0 : 1;
    unsigned char mine = mine_ok, *all = ml_xcalloc((size_t)b->world, 1);
    int rc = b->real->allgather_blob(ss->plans[0].ptrs[0], &mine, 1, all, ss->err, ss->elen);
    for (int r = 0; rc == 0 && r < b->world; r++)
        if (!all[r]) {
            if (mine_ok)
                snprintf(why, len, "rank %d cannot collect kernel records (CUPTI)", r);
            rc = 1;
            break;
        }
    free(all);
    return rc;
}

int bench_kernels(bench *b, const rank_plan *const *plans, size_t n_plans, bench_plan_result *out,
                  char *err, size_t len) {
    session ss;
    int rc = bs_open(&ss, b, plans, n_plans, err, len);
    char why[400] = "";
    bool began = false;
    if (rc == 0) {
        began = kn_begin(why, sizeof why) == 0;
        rc = agree_on_cupti(&ss, began, why, sizeof why);
    }
    int unavailable = rc == 1;
    if (unavailable) {
        snprintf(err, len, "%s", why);
        rc = 0;
    }
    for (size_t p = 0; rc == 0 && !unavailable && p < n_plans; p++)
        rc = kernel_run(&ss, p);
    kn_kernel *ks = NULL;
    size_t nk = 0;
    uint64_t dropped = 0;
    if (began && kn_end(&ks, &nk, &dropped, why, sizeof why) != 0 && rc == 0) {
        snprintf(err, len, "%s", why);
        rc = -1;
    }
    if (rc == 0 && !unavailable) {
        bench_plan_result *local = ml_xcalloc(n_plans ? n_plans : 1, sizeof *local);
        attribute(&ss, ks, nk, local);
        rc = gather_windows(&ss, local, out);
        for (size_t p = 0; p < n_plans; p++)
            bench_plan_result_free(&local[p]);
        free(local);
    }
    kn_kernels_free(ks, nk);
    bench_plan_result *ignored = ml_xcalloc(n_plans ? n_plans : 1, sizeof *ignored);
    rc = bs_finish(&ss, ignored, rc);
    for (size_t p = 0; p < n_plans; p++)
        bench_plan_result_free(&ignored[p]);
    free(ignored);
    return rc != 0 ? -1 : unavailable;
}
