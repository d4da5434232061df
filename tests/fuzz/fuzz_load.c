/* SPDX-License-Identifier: MIT */
/* fuzz_load.c — libFuzzer harness over everything memlife does with a schedule it has not run:
 * load (libyaml events, expressions), expand the plan of every rank, lint, predict and evaluate
 * the expectations. Built by tests/fuzz.sh with clang -fsanitize=fuzzer,address,undefined.
 *
 * Besides crashes, leaks and undefined behaviour, the harness asserts the contracts of the
 * headers that a fuzzer can check: the loader returns NULL exactly when it reported an error
 * (sched.h), every diagnostic has a 1-based position inside the input (util.h: people count from
 * 1; 0:0 is the convention for "no position", printed without one) and a non-empty text, and a
 * prediction's byte counts are int64 values >= 0 with steady <= peak compared as int64 (the JSON
 * keeps int64: a sum past 2^63-1 must be an error, base/checked.h, never a negative peak).
 * Every input is loaded twice: from memory and through the file entry point (a memfd, read by
 * base/input.c as a regular file), and both must give the same verdict and first diagnostic. A
 * broken contract aborts, which libFuzzer reports as a crash with the input that caused it. */
#include "lint/lint.h"
#include "predict/analyzer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Bounds that keep one input fast; the loader and expander must enforce them with a diagnostic.
 * A world as large as the file asks (up to 2^20) would make each input cost seconds; 64 reaches
 * what 8 did not (rank*size products, per-rank shards of odd sizes, the cross-rank lint's
 * tables), and the per-rank code is the same at 64 as at 2^20. */
enum { FUZZ_MAX_WORLD = 64, FUZZ_MAX_OPS = 1 << 14, FUZZ_DEFAULT_WORLD = 3 };

static const char fuzz_file[] = "fuzz.yaml";

static void fail(const char *what, const ml_diag *dg) {
    char text[1024] = "";
    if (dg)
        ml_diag_format(dg, text, sizeof text);
    fprintf(stderr, "fuzz_load: contract broken: %s: %s\n", what, text);
    abort();
}

/* Lines in the input as libyaml counts them (CR LF, CR, LF, NEL, LS, PS), for the bound on
 * diagnostic positions (one past the last line is where libyaml puts problems found at the end
 * of a file that ends with a line break). */
static uint32_t count_lines(const uint8_t *p, size_t size) {
    uint32_t lines = 1;
    for (size_t k = 0; k < size; k++) {
        if (p[k] == '\r' && k + 1 < size && p[k + 1] == '\n')
            k++;
        else if (p[k] == 0xC2 && k + 1 < size && p[k + 1] == 0x85)
            k++;
        else if (p[k] == 0xE2 && k + 2 < size && p[k + 1] == 0x80 &&
                 (p[k + 2] == 0xA8 || p[k + 2] == 0xA9))
            k += 2;
        else if (p[k] != '\r' && p[k] != '\n')
            continue;
        lines++;
    }
    return lines;
}

static void check_diags(const ml_diags *d, size_t from, uint32_t lines) {
    for (size_t k = from; k < d->items.n; k++) {
        const ml_diag *dg = &ML_VEC_AT(&d->items, ml_diag, k);
        char text[1024];
        ml_diag_format(dg, text, sizeof text);
        if (!dg->text || !dg->text[0])
            fail("empty diagnostic text", dg);
        bool nowhere = dg->mark.line == 0 && dg->mark.col == 0;
        if (!nowhere && (dg->mark.line < 1 || dg->mark.col < 1))
            fail("diagnostic position is not 1-based", dg);
        if (dg->mark.line > lines)
            fail("diagnostic line past the end of the input", dg);
        if (strncmp(text, fuzz_file, sizeof fuzz_file - 1) != 0)
            fail("diagnostic does not start with the file name", dg);
    }
}

/* One plan of s on every rank: expand, lint, predict, expectations; frees everything. */
static void analyze_plan(const sched *s, int plan_index, const sched_params *p, int world,
                         ml_diags *d) {
    plan_limits lim = {.max_ops = FUZZ_MAX_OPS};
    rank_plan plans[FUZZ_MAX_WORLD];
    pred_rank pred[FUZZ_MAX_WORLD];
    memset(plans, 0, sizeof plans);
    memset(pred, 0, sizeof pred);
    int expanded = 0, predicted = 0;
    for (; expanded < world; expanded++)
        if (plan_expand(s, plan_index, p, world, expanded, &lim, &plans[expanded], d) != 0) {
            expanded++;   /* a failed expansion may still own memory: plan_free must take it */
            goto out;
        }
    lint_options lo;
    lint_options_default(&lo);
    lint_result lr = {0};
    size_t lint_errors = lint_plans(plans, world, &lo, &lr, d);
    lint_result_free(&lr);
    if (lint_errors)
        goto out;
    for (; predicted < world; predicted++) {
        if (predict_rank(&plans[predicted], &pred[predicted], d) != 0) {
            predicted++;
            goto out;
        }
        const pred_rank *r = &pred[predicted];
        for (int v = 0; v < VIEW_COUNT; v++) {
            int64_t steady = (int64_t)r->steady[v], peak = (int64_t)r->peak[v];
            if (steady < 0 || peak < 0)
                fail("predicted bytes negative as int64", NULL);
            if (steady > peak)
                fail("predicted steady above peak (int64)", NULL);
            if ((int64_t)r->peak_lo[v] < 0 || (int64_t)r->peak_hi[v] < 0 ||
                r->peak_lo[v] > r->peak_hi[v])
                fail("predicted peak bounds negative as int64 or inverted", NULL);
        }
        if ((int64_t)r->floor < 0)
            fail("predicted floor negative as int64", NULL);
    }
    expect_row *rows = NULL;
    size_t n_rows = 0;
    expect_eval(s, plan_index, p, world, pred, &rows, &n_rows, d);
    free(rows);
out:
    for (int r = 0; r < predicted; r++)
        pred_rank_free(&pred[r]);
    for (int r = 0; r < expanded; r++)
        plan_free(&plans[r]);
}

/* The file entry point on the same bytes: a memfd, named by its /proc path. Its verdict and
 * first diagnostic (past the file name) must be the memory load's. */
static void load_through_file(const uint8_t *data, size_t size, const ml_diags *mem) {
    static int fd = -1;
    if (fd < 0)
        fd = memfd_create("fuzz", 0);
    if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        fail("cannot write the memfd", NULL);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ml_diags d;
    ml_diags_init(&d);
    sched *s = sched_load_file(path, NULL, &d);
    if ((s == NULL) != (mem->errors > 0))
        fail("file and memory loads disagree", ml_diags_first_error(s ? mem : &d));
    const ml_diag *a = ml_diags_first_error(mem), *b = ml_diags_first_error(&d);
    if (a && b && (a->mark.line != b->mark.line || a->mark.col != b->mark.col ||
                   strcmp(a->text, b->text)))
        fail("file and memory loads give different first errors", b);
    sched_free(s);
    ml_diags_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ml_diags d;
    ml_diags_init(&d);
    uint32_t lines = count_lines(data, size);
    sched *s = sched_load_buffer(fuzz_file, (const char *)data, size, NULL, &d);
    if ((s == NULL) != (d.errors > 0))
        fail(s ? "load returned a schedule and an error" : "load failed without an error",
             ml_diags_first_error(&d));
    check_diags(&d, 0, lines);
    load_through_file(data, size, &d);
    if (s) {
        size_t from = d.items.n;
        sched_params p = {0};
        /* No world in the file (the CLI would need --world), or one too big to fuzz quickly. */
        if (s->world <= 0 || s->world > FUZZ_MAX_WORLD)
            p.world = s->world > FUZZ_MAX_WORLD ? FUZZ_MAX_WORLD : FUZZ_DEFAULT_WORLD;
        int world = sched_world(s, &p, &d);
        for (uint32_t k = 0; world > 0 && k < s->n_plans; k++)
            analyze_plan(s, (int)k, &p, world, &d);
        check_diags(&d, from, lines);
        sched_free(s);
    }
    ml_diags_free(&d);
    return 0;
}
