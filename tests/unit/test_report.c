/* SPDX-License-Identifier: MIT */
/* test_report.c — the report writers (table, json, csv, md), their shared cell formatting, and
 * the shared option parser of the CLI (cli/args.c). Schedules come from strings; numbers are the
 * chapter's naive RS+AG lifetime at world 2 (docs/design.md: 256 / 640 MiB on 2 x H200). */
#include "testutil.h"
#include "predict/analyzer.h"
#include "report/report.h"
#include "report/report_int.h"
#include "predict/commmodel.h"
#include "cli/args.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

static const char naive_yaml[] =
    "name: naive\n"
    "world: 2\n"
    "let: {M: 256MiB}\n"
    "expect:\n"
    "  requested: {steady: M, peak: 2*M + M/world}\n"
    "steps:\n"
    "  - alloc: {buf: full, bytes: M}\n"
    "  - alloc: {buf: shard, bytes: M/world}\n"
    "  - alloc: {buf: gathered, bytes: M}\n"
    "  - reduce_scatter: {send: full, recv: shard, op: sum}\n"
    "  - all_gather: {send: shard, recv: gathered}\n"
    "  - sync: device\n"
    "  - free: [full, shard]\n";

/* One schedule analyzed for every rank, as analyzer/pipeline/pipeline.c does it, held for the writers. */
typedef struct {
    sched *s;
    rank_plan plans[8];
    pred_rank pred[8];
    expect_row *expects;
    size_t n_expects;
    report_schedule item;
    report rep;
    ml_diags d;
} fixture;

static void analyze(fixture *f, const char *yaml, const char **set, size_t n_set) {
    memset(f, 0, sizeof *f);
    ml_diags_init(&f->d);
    f->s = tu_load(yaml, &f->d);
    assert_non_null(f->s);
    sched_params p = {.set = set, .n_set = n_set, .world = 0};
    int world = sched_world(f->s, &p, &f->d);
    assert_true(world > 0 && world <= 8);
    for (int r = 0; r < world; r++) {
        assert_int_equal(plan_expand(f->s, 0, &p, world, r, NULL, &f->plans[r], &f->d), 0);
        assert_int_equal(predict_rank(&f->plans[r], &f->pred[r], &f->d), 0);
    }
    int failures = expect_eval(f->s, 0, &p, world, f->pred, &f->expects, &f->n_expects, &f->d);
    assert_true(failures >= 0);
    f->item = (report_schedule){.s = f->s, .plan_index = 0, .world = world, .plans = f->plans,
                                .pred = f->pred, .expects = f->expects,
                                .n_expects = f->n_expects,
                                .expect_failures = f->n_expects ? failures : -1};
    f->rep = (report){.items = &f->item, .n = 1, .command = "predict"};
}

static void release(fixture *f) {
    for (int r = 0; r < f->item.world; r++) {
        plan_free(&f->plans[r]);
        pred_rank_free(&f->pred[r]);
    }
    free(f->expects);
    sched_free(f->s);
    ml_diags_free(&f->d);
}

static char *render(const fixture *f, report_format fmt) {
    ml_str out = {0};
    ml_str_append(&out, "", 0);
    assert_int_equal(report_render(&f->rep, fmt, &out), 0);
    return out.s;
}

/* ---- cells --------------------------------------------------------------------------------- */

static void test_size_cell(void **state) {
    (void)state;
    char buf[80];
    /* the cells are base/human.h's sizes (test_human.c has the rule's cases) */
    report_size_cell(256 * MIB, buf, sizeof buf);
    assert_string_equal(buf, "256 MiB");
    report_size_cell(0, buf, sizeof buf);
    assert_string_equal(buf, "0 B");
    /* page_stress: 1 MiB + 1 is not whole: rounded, and marked so */
    report_size_cell(MIB + 1, buf, sizeof buf);
    assert_string_equal(buf, "~1 MiB");
    report_size_cell(34120, buf, sizeof buf);   /* padded 1003 contract peak at world 4: 33.32 KiB */
    assert_string_equal(buf, "~33.3 KiB");
    report_size_cell(520, buf, sizeof buf);     /* exact-sum contract peak: under 1 KiB, exact */
    assert_string_equal(buf, "520 B");
}

static void test_ranks_text(void **state) {
    (void)state;
    char buf[64];
    int all[] = {0, 1, 2, 3}, gaps[] = {0, 2, 3, 5};
    report_ranks_text(all, 4, buf, sizeof buf);
    assert_string_equal(buf, "0-3");
    report_ranks_text(gaps, 4, buf, sizeof buf);
    assert_string_equal(buf, "0, 2-3, 5");
    report_ranks_text(all, 1, buf, sizeof buf);
    assert_string_equal(buf, "0");
}

static void test_grid_aligns(void **state) {
    (void)state;
    static const char *const headers[] = {"rank", "name"};
    static const bool right[] = {true, false};
    report_grid g;
    report_grid_init(&g, 2, headers, right);
    report_grid_add(&g, "0");
    report_grid_add(&g, "a");
    report_grid_add(&g, "10");
    report_grid_add(&g, "b|c");
    ml_str out = {0};
    report_grid_render(&g, false, "", 0, NULL, &out);
    assert_string_equal(out.s, "rank  name\n   0  a\n  10  b|c\n");
    ml_str_free(&out);
    ml_str_append(&out, "", 0);
    report_grid_render(&g, true, "", 0, NULL, &out);
    /* a '|' inside a Markdown cell is escaped so the table keeps its columns */
    assert_string_equal(out.s, "| rank | name |\n| ---: | --- |\n| 0 | a |\n| 10 | b\\|c |\n");
    ml_str_free(&out);
    report_grid_free(&g);
}

/* Fitting a width (report_int.h): the prose column narrows to WRAP_MIN (16) and wraps at
 * spaces; below that the highest priority goes, all its columns together, and is named. */
static void test_grid_fits(void **state) {
    (void)state;
    static const char *const headers[] = {"rank", "a", "b", "why"};
    static const bool right[] = {true, true, true, false};
    report_grid g;
    report_grid_init(&g, 4, headers, right);
    report_grid_priority(&g, 1, 2);
    report_grid_priority(&g, 2, 2);
    report_grid_priority(&g, 3, 1);
    report_grid_wrap(&g, 3);
    const char *cells[] = {"0", "256 MiB", "64 MiB", "the gathered buffer is live with full"};
    for (size_t k = 0; k < 4; k++)
        report_grid_add(&g, cells[k]);
    ml_str out = {0}, dropped = {0};
    ml_str_append(&out, "", 0);
    ml_str_append(&dropped, "", 0);
    /* unlimited: one line of 2 + 4 + 2 + 7 + 2 + 6 + 2 + 37 = 62 columns */
    report_grid_render(&g, false, "  ", 0, &dropped, &out);
    assert_string_equal(out.s, "  rank        a       b  why\n"
                               "     0  256 MiB  64 MiB  the gathered buffer is live with full\n");
    assert_int_equal(dropped.n, 0);
    /* 40: the 25 fixed columns leave 15 for 'why', under its 16: a and b go, and 'why' gets
     * the 32 columns left of its 37 */
    out.n = 0;
    report_grid_render(&g, false, "  ", 40, &dropped, &out);
    assert_string_equal(out.s, "  rank  why\n     0  the gathered buffer is live with\n        full\n");
    assert_string_equal(dropped.s, "a, b");
    /* 45: 'why' keeps a and b at 20 columns, broken at the spaces */
    out.n = 0;
    dropped.n = 0;
    dropped.s[0] = '\0';
    report_grid_render(&g, false, "  ", 45, &dropped, &out);
    assert_string_equal(out.s, "  rank        a       b  why\n"
                               "     0  256 MiB  64 MiB  the gathered buffer\n"
                               "                         is live with full\n");
    assert_int_equal(dropped.n, 0);
    /* 10: 'why' at its 16 is still too wide, so it goes too; rank (priority 0) stays */
    out.n = 0;
    dropped.n = 0;
    dropped.s[0] = '\0';
    report_grid_render(&g, false, "", 10, &dropped, &out);
    assert_string_equal(out.s, "rank\n   0\n");
    assert_string_equal(dropped.s, "a, b, why");
    ml_str_free(&out);
    ml_str_free(&dropped);
    report_grid_free(&g);
}

/* ---- writers ------------------------------------------------------------------------------- */

static void test_table(void **state) {
    (void)state;
    fixture f;
    analyze(&f, naive_yaml, NULL, 0);
    char *t = render(&f, FMT_TABLE);
    /* seed (2 x H200): naive RS+AG 256 MiB steady, 640 MiB peak at world 2 */
    assert_non_null(strstr(t, "naive (t.yaml, world 2)\n"));
    /* floor 256 MiB: RS in place into full's own slice, then AG in place (analyzer/floor.c) */
    assert_non_null(strstr(t, "     0           256 MiB         640 MiB        256 MiB      640 MiB  256 MiB  9:5 alloc  full, shard, gathered\n"));
    assert_non_null(strstr(t, "  expect requested peak 640 MiB (line 5): pass on ranks 0-1\n"));
    free(t);
    release(&f);
}

static void test_table_failed_expectation(void **state) {
    (void)state;
    const char *set[] = {"M=128MiB"};
    fixture f;
    /* the expectation follows M, so it still holds: 128 / 320 MiB */
    analyze(&f, naive_yaml, set, 1);
    char *t = render(&f, FMT_TABLE);
    assert_non_null(strstr(t, "  expect requested peak 320 MiB (line 5): pass on ranks 0-1\n"));
    free(t);
    release(&f);

    static const char wrong[] =
        "name: wrong\nworld: 2\nexpect:\n  requested: {peak: 1MiB}\n"
        "steps:\n  - alloc: {buf: x, bytes: 2MiB}\n  - free: x\n";
    analyze(&f, wrong, NULL, 0);
    t = render(&f, FMT_TABLE);
    assert_non_null(strstr(t, "  expect requested peak 1 MiB (line 4): FAIL on ranks 0-1, predicted 2 MiB\n"));
    char text[256];
    report_expect_text(&f.expects[0], text, sizeof text);
    assert_string_equal(text, "expected requested peak 1 MiB on rank 0, predicted 2 MiB");
    free(t);
    release(&f);
}

/* check's errors and the Markdown list fold the ranks that fail alike: ranks 0-2 allocate 2 MiB,
 * rank 3 allocates 3 MiB (2MiB + (rank == 3) * 1MiB) against a 1 MiB budget: two lines, not 4. */
static void collect_line(void *ctx, ml_mark at, const char *text) {
    ml_str *out = ctx;
    ml_str_printf(out, "%u:%u %s\n", at.line, at.col, text);
}

static void test_failures_fold(void **state) {
    (void)state;
    static const char yaml[] =
        "name: fold\nworld: 4\nexpect:\n  requested: {peak: 1MiB}\n"
        "steps:\n  - alloc: {buf: x, bytes: 2MiB + (rank == 3) * 1MiB}\n  - free: x\n";
    fixture f;
    analyze(&f, yaml, NULL, 0);
    ml_str out = {0};
    assert_int_equal(report_expect_failures(&f.item, collect_line, &out), 4);
    assert_string_equal(out.s, "4:3 expected requested peak 1 MiB on ranks 0-2, predicted 2 MiB\n"
                               "4:3 expected requested peak 1 MiB on rank 3, predicted 3 MiB\n");
    ml_str_free(&out);
    release(&f);
}

static void test_json(void **state) {
    (void)state;
    fixture f;
    analyze(&f, naive_yaml, NULL, 0);
    char *text = render(&f, FMT_JSON);
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    assert_non_null(root);
    json_t *s = json_array_get(json_object_get(root, "schedules"), 0);
    assert_string_equal(json_string_value(json_object_get(s, "name")), "naive");
    assert_string_equal(json_string_value(json_object_get(s, "expect")), "pass");
    assert_int_equal(json_integer_value(json_object_get(s, "world")), 2);
    json_t *r1 = json_array_get(json_object_get(s, "ranks"), 1);
    assert_int_equal(json_integer_value(json_object_get(r1, "rank")), 1);
    json_t *req = json_object_get(r1, "requested");
    assert_true(json_is_integer(json_object_get(req, "peak")));
    assert_int_equal(json_integer_value(json_object_get(req, "peak")), 640 * MIB);
    assert_int_equal(json_integer_value(json_object_get(req, "steady")), 256 * MIB);
    json_t *step = json_object_get(r1, "peak_step");
    assert_int_equal(json_integer_value(json_object_get(step, "line")), 9);
    assert_int_equal(json_array_size(json_object_get(r1, "peak_live")), 3);
    /* 2 ranks x (steady + peak) of the requested view */
    assert_int_equal(json_array_size(json_object_get(s, "expectations")), 4);
    json_decref(root);
    free(text);
    release(&f);
}

static void test_csv_and_md(void **state) {
    (void)state;
    static const char comma[] =
        "name: \"a,b\"\nworld: 4\nsteps:\n  - alloc: {buf: x, bytes: 1MiB}\n  - free: x\n";
    fixture f;
    analyze(&f, comma, NULL, 0);
    char *csv = render(&f, FMT_CSV);
    /* header + one row per rank; the comma in the name is quoted (RFC 4180) */
    int lines = 0;
    for (const char *c = csv; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 5);
    assert_non_null(strstr(csv, "\n\"a,b\",,t.yaml,4,3,0,1048576,0,2097152,true,"));
    char *md = render(&f, FMT_MD);
    /* equal ranks collapse into one row */
    assert_non_null(strstr(md, "| a,b | 4 | 0-3 | 0 B | 1 MiB | 0 B | 2 MiB |"));
    free(csv);
    free(md);
    release(&f);
}

static void test_emit_atomic(void **state) {
    (void)state;
    fixture f;
    analyze(&f, naive_yaml, NULL, 0);
    char dir[] = "/tmp/memlife-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/r.csv", dir);
    assert_int_equal(report_emit(&f.rep, FMT_CSV, path), 0);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char line[512];
    assert_non_null(fgets(line, sizeof line, fp));
    assert_int_equal(strncmp(line, "schedule,plan,file,world,rank,", 30), 0);
    fclose(fp);
    unlink(path);
    snprintf(path, sizeof path, "%s/missing/r.csv", dir);
    assert_int_equal(report_emit(&f.rep, FMT_CSV, path), -1);
    rmdir(dir);
    assert_int_equal(report_format_lookup("md"), FMT_MD);
    assert_int_equal(report_format_lookup("xml"), -1);
    release(&f);
}

/* ---- option parsing ------------------------------------------------------------------------ */

/* The communicator lines of a GPU run's text (report_text.c): the world's, then one per split
 * holding rank 0, with --gpu's kind. World 2 on h100-80gb (commmodel.h; MiB): the world 198 + 4
 * + 32 x 6 = 394, no collective on it; tp (both ranks, share) 4 + 32 x 4 = 132 at init, 32 x 12
 * rings + 90 of the first kernel = 474 at its all_reduce; solo (rank 0 alone) 4 + 64 x 6 + 2 (the
 * first unshared split's granule) = 390, nothing at its all_reduce: 1390 MiB, ~1.36 GiB. */
static void test_communicator_lines(void **state) {
    (void)state;
    static const char yaml[] =
        "world: 2\n"
        "comms:\n"
        "  tp: {ranks: [0, 1], share: true}\n"
        "  solo: {color: rank, key: rank}\n"
        "steps:\n"
        "  - alloc: {buf: x, count: 8}\n"
        "  - all_reduce: {buf: x, comm: tp}\n"
        "  - all_reduce: {buf: x, comm: solo}\n";
    fixture f;
    analyze(&f, yaml, NULL, 0);
    report_measured measured[2];
    memset(measured, 0, sizeof measured);
    measured[0].present = measured[1].present = true;
    measured[0].rec.has_device = true;   /* a GPU run: the communicator lines are shown */
    f.item.measured = measured;
    f.item.gpu = 1 + commmodel_gpu_find("h100-80gb");
    char *text = render(&f, FMT_TABLE);
    static const char *const want[] = {
        "  communicator predicted ~1.36 GiB (NCCL 2.28 rules on h100-80gb, 32 channels: init 394 "
        "MiB)\n",
        "    communicator 'tp' (2 ranks, shares the world's resources) 606 MiB (32 channels: init "
        "132 MiB, all_reduce 474 MiB)\n",
        "    communicator 'solo' (1 rank) 390 MiB (64 channels: init 390 MiB, all_reduce 0 B)\n",
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        if (!strstr(text, want[k]))
            fail_msg("missing line %zu: %s\nin:\n%s", k, want[k], text);
    free(text);
    release(&f);
}

static void test_args(void **state) {
    (void)state;
    char *argv[] = {"predict", "a.yaml", "--world", "8", "--set", "M=1GiB", "--set=q=2",
                    "-f", "json", "-o", "out.json", "--plan=direct", "-q", "--", "-b.yaml"};
    ml_args a;
    assert_int_equal(ml_args_parse(&a, "predict", 15, argv, NULL, 0, false), 0);
    assert_int_equal(a.world, 8);
    assert_int_equal(a.format, FMT_JSON);
    assert_true(a.format_set);
    assert_string_equal(a.output, "out.json");
    assert_string_equal(a.plan, "direct");
    assert_true(a.quiet);
    assert_int_equal(a.set.n, 2);
    assert_string_equal(ML_VEC_AT(&a.set, const char *, 1), "q=2");
    assert_int_equal(a.files.n, 2);
    assert_string_equal(ML_VEC_AT(&a.files, const char *, 1), "-b.yaml");
    sched_params p = ml_args_params(&a);
    assert_int_equal(p.world, 8);
    assert_int_equal(p.n_set, 2);
    ml_args_free(&a);
}

static void test_args_errors(void **state) {
    (void)state;
    ml_args a;
    char *bad_world[] = {"predict", "x.yaml", "--world", "0"};
    assert_int_equal(ml_args_parse(&a, "predict", 4, bad_world, NULL, 0, false), ML_EXIT_INPUT);
    ml_args_free(&a);
    char *no_value[] = {"predict", "x.yaml", "--plan"};
    assert_int_equal(ml_args_parse(&a, "predict", 3, no_value, NULL, 0, false), ML_EXIT_INPUT);
    ml_args_free(&a);
    char *bad_set[] = {"predict", "x.yaml", "--set", "=3"};
    assert_int_equal(ml_args_parse(&a, "predict", 4, bad_set, NULL, 0, false), ML_EXIT_INPUT);
    ml_args_free(&a);
    char *flag_value[] = {"predict", "x.yaml", "--quiet=1"};
    assert_int_equal(ml_args_parse(&a, "predict", 3, flag_value, NULL, 0, false), ML_EXIT_INPUT);
    ml_args_free(&a);
    char *no_file[] = {"predict"};
    assert_int_equal(ml_args_parse(&a, "predict", 1, no_file, NULL, 0, false), ML_EXIT_INPUT);
    ml_args_free(&a);
    /* --help wins even after an unknown option */
    char *help[] = {"predict", "--bogus", "-h"};
    assert_int_equal(ml_args_parse(&a, "predict", 3, help, NULL, 0, false), 0);
    assert_true(a.help);
    ml_args_free(&a);
}

/* run's row in commands.def has CMD_BACKEND | CMD_ALLOCATOR: the backend options come with the
 * command (backend_opts.h), its own rows (here --no-data) beside them; predict has none. */
static void test_args_extra(void **state) {
    (void)state;
    bool no_data = false;
    const ml_opt extra[] = {
        {"--no-data", NULL, OPT_FLAG, &no_data, 0, 0, NULL, NULL, "no data"},
    };
    char *argv[] = {"run", "x.yaml", "-b", "cuda", "-n", "4", "--timeout=2.5", "--no-data",
                    "--allocator", "chunked", "--gpus", "2"};
    ml_args a;
    assert_int_equal(ml_args_parse(&a, "run", 12, argv, extra, 1, false), 0);
    assert_string_equal(a.backend.backend, "cuda");
    assert_int_equal(a.backend.ranks, 4);
    assert_int_equal(a.backend.gpus, 2);
    assert_true(a.backend.timeout == 2.5);
    assert_true(no_data);
    assert_int_equal(a.backend.allocator, 2);
    assert_string_equal(ml_allocator_names[a.backend.allocator], "chunked");
    ml_args_free(&a);
    /* the defaults: host, 60 s, the cuda allocator, nothing else given */
    char *plain[] = {"run", "x.yaml"};
    assert_int_equal(ml_args_parse(&a, "run", 2, plain, extra, 1, false), 0);
    assert_string_equal(a.backend.backend, "host");
    assert_true(a.backend.timeout == 60.0);
    assert_int_equal(a.backend.ranks + a.backend.gpus + a.backend.allocator, 0);
    ml_args_free(&a);
    char *bad_timeout[] = {"run", "x.yaml", "--timeout", "-1"};
    assert_int_equal(ml_args_parse(&a, "run", 4, bad_timeout, extra, 1, false), ML_EXIT_INPUT);
    ml_args_free(&a);
    char *bad_choice[] = {"run", "x.yaml", "--allocator", "vmm"};
    assert_int_equal(ml_args_parse(&a, "run", 4, bad_choice, extra, 1, false), ML_EXIT_INPUT);
    ml_args_free(&a);
    /* bench has the backend options but not --allocator; predict has none of them */
    char *bench_alloc[] = {"bench", "x.yaml", "--allocator", "async"};
    assert_int_equal(ml_args_parse(&a, "bench", 4, bench_alloc, NULL, 0, false), ML_EXIT_INPUT);
    ml_args_free(&a);
    char *predict_backend[] = {"predict", "x.yaml", "--backend", "host"};
    assert_int_equal(ml_args_parse(&a, "predict", 4, predict_backend, NULL, 0, false),
                     ML_EXIT_INPUT);
    ml_args_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_cell),
        cmocka_unit_test(test_ranks_text),
        cmocka_unit_test(test_grid_aligns), cmocka_unit_test(test_grid_fits),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_table_failed_expectation),
        cmocka_unit_test(test_failures_fold),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_csv_and_md),
        cmocka_unit_test(test_emit_atomic),
        cmocka_unit_test(test_communicator_lines),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_args_errors),
        cmocka_unit_test(test_args_extra),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
