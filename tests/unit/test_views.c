/* SPDX-License-Identifier: MIT */
/* test_views.c — the view table (runtime/ir/views.c) and the torch view's model through the
 * predictor: the worked example measured on an H200 (tests/torch/fixtures/allocator/
 * worked_example__default.json), record_stream with an event, the predicted out-of-memory and
 * the loader's `torch:` key and `expect: {torch: ...}`. */
#include "plantest.h"
#include "predict/view_model.h"

/* Every series belongs to exactly the view that lists it; view names are unique and found. */
static void table_is_consistent(void **state) {
    int owner[VIEW_COUNT];
    for (int v = 0; v < VIEW_COUNT; v++)
        owner[v] = -1;
    for (int view = 0; view < MV_COUNT; view++) {
        const ml_view_info *vi = &ml_views[view];
        assert_true(vi->n_series >= 1 && vi->n_series <= ML_VIEW_MAX_SERIES);
        for (int k = 0; k < vi->n_series; k++) {
            assert_int_equal(owner[vi->series[k]], -1);
            owner[vi->series[k]] = view;
            assert_int_equal(ml_series[vi->series[k]].view, view);
            /* a view of several series names each by a key, one of one series by itself */
            assert_true((vi->n_series > 1) == (ml_series[vi->series[k]].key != NULL));
        }
        assert_int_equal(ml_view_lookup(vi->name, strlen(vi->name)), view);
    }
    for (int v = 0; v < VIEW_COUNT; v++)
        assert_int_not_equal(owner[v], -1);
    assert_int_equal(ml_view_lookup("torchx", 6), -1);
}

/* 40894976 / 50331648 after the last step, as measured; the peaks there; the steps before. */
static void torch_worked_example(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 1\n"
            "torch: {}\n"
            "steps:\n"
            "  - alloc: {buf: a, bytes: 1000}\n"
            "  - alloc: {buf: b, bytes: 3MiB}\n"
            "  - alloc: {buf: c, bytes: 12MiB}\n"
            "  - free: b\n"
            "  - alloc: {buf: d, bytes: 1MiB + 1}\n"
            "  - free: a\n"
            "  - alloc: {buf: e, bytes: 25MiB}\n",
            0);
    pt_predict(&r);
    const pred_rank *p = &r.pred[0];
    assert_true(p->on[MV_TORCH]);
    /* the fixture's allocated / reserved after each step */
    static const uint64_t want[7][2] = {{1024, 2097152},         {3146752, 23068672},
                                        {15729664, 23068672},    {12583936, 23068672},
                                        {13633024, 23068672},    {13632000, 23068672},
                                        {40894976, 50331648}};
    assert_int_equal(p->n_timeline, 7);
    for (int k = 0; k < 7; k++) {
        assert_int_equal(p->timeline[k].live[VIEW_TORCH_ALLOCATED], want[k][0]);
        assert_int_equal(p->timeline[k].live[VIEW_TORCH_RESERVED], want[k][1]);
    }
    assert_int_equal(p->peak[VIEW_TORCH_RESERVED], 50331648);
    assert_int_equal(p->peak_op[VIEW_TORCH_RESERVED], 6);
    /* at the reserved peak: segments 26 MiB, 2 MiB, 20 MiB (address order, as the H200 placed
     * them: tests/torch/fixtures/allocator/worked_example__default.json), fragmentation
     * 50331648 - 40894976 = 2 MiB whole free + 7339520 free inside the 20 MiB segment */
    assert_non_null(p->torch);
    const pred_torch_peak *pk = &p->torch->at[1];
    assert_int_equal(pk->n_segments, 3);
    assert_int_equal(pk->segments[0].size, 26 * MiB);
    assert_int_equal(pk->segments[1].size, 2 * MiB);
    assert_int_equal(pk->segments[2].size, 20 * MiB);
    assert_int_equal(pk->whole_free_segments, 2 * MiB);
    assert_int_equal(pk->free_in_used_segments, 7339520);
    assert_int_equal(pk->pending_free, 0);
    pt_free(&r);
}

/* record_stream + an event: the block waits for the work recorded before the free; a sync on
 * the event recorded after that work lets the next malloc reuse it. */
static void torch_record_stream_event(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 1\n"
            "streams: [side]\n"
            "events: [done]\n"
            "torch: {}\n"
            "steps:\n"
            "  - alloc: {buf: x, bytes: 12MiB}\n"
            "  - compute: {writes: [x], stream: side}\n"
            "  - record: {event: done, stream: side}\n"
            "  - record_stream: {buf: x, stream: side}\n"
            "  - free: x\n"
            "  - alloc: {buf: y, bytes: 12MiB}\n"      /* x pending: a new segment, 24 MiB */
            "  - sync: {event: done}\n"
            "  - alloc: {buf: z, bytes: 12MiB}\n",     /* x's block is back: still 24 MiB */
            0);
    pt_lint(&r);
    assert_int_equal(r.lint_errors, 0);   /* the free after record_stream needs no sync */
    pt_predict(&r);
    const pred_rank *p = &r.pred[0];
    assert_int_equal(p->timeline[5].live[VIEW_TORCH_RESERVED], 24 * MiB);
    assert_int_equal(p->timeline[7].live[VIEW_TORCH_RESERVED], 24 * MiB);
    assert_int_equal(p->timeline[7].live[VIEW_TORCH_ALLOCATED], 24 * MiB);
    assert_int_equal(p->steady[VIEW_REQUESTED], 24 * MiB);
    pt_free(&r);
}

/* Out of memory under the limit: an error at the alloc's bytes with the numbers, predict fails. */
static void torch_out_of_memory(void **state) {
    pt_run r;
    pt_load(&r,
            "world: 1\n"
            "torch: {limit: 1GiB}\n"
            "steps:\n"
            "  - alloc: {buf: a, bytes: 400MiB}\n"
            "  - alloc: {buf: b, bytes: 400MiB}\n"
            "  - alloc: {buf: c, bytes: 256MiB}\n",
            0);
    pred_rank p;
    assert_int_equal(predict_rank(&r.plans[0], &p, &r.d), -1);
    assert_string_equal(pt_diag(&r, 0),
                        "t.yaml:6:28: error: would run out of memory at alloc 'c' (256 MiB): "
                        "allocated 800 MiB, reserved 800 MiB, limit 1 GiB (torch view, rank 0)");
    pt_free(&r);
}

/* Without a torch key the view is off and its series stay 0. */
static void torch_off_by_default(void **state) {
    pt_run r;
    pt_load(&r, "world: 1\nsteps:\n  - alloc: {buf: a, bytes: 1000}\n", 0);
    pt_predict(&r);
    assert_false(r.pred[0].on[MV_TORCH]);
    assert_null(r.pred[0].torch);
    assert_int_equal(r.pred[0].peak[VIEW_TORCH_RESERVED], 0);
    pt_free(&r);
}

/* The loader: expect keys from the table, a misspelt series key, the conf checker's column. */
static void torch_loader(void **state) {
    ml_diags d;
    ml_diags_init(&d);
    sched *s = tu_load("world: 1\n"
                       "torch: {conf: \"max_split_size_mb:64\", limit: 2GiB}\n"
                       "expect: {torch: {allocated: {peak: 1}, reserved: {steady: 2}}}\n"
                       "steps:\n  - alloc: {buf: a, bytes: 1}\n",
                       &d);
    assert_non_null(s);
    assert_true(s->torch.present);
    assert_string_equal(s->torch.conf, "max_split_size_mb:64");
    assert_int_equal(s->n_expects, 2);
    assert_int_equal(s->expects[0].view, VIEW_TORCH_ALLOCATED);
    assert_int_equal(s->expects[1].view, VIEW_TORCH_RESERVED);
    sched_free(s);
    s = tu_load("world: 1\nexpect: {torch: {alocated: {peak: 1}}}\nsteps:\n  - alloc: {buf: a, bytes: 1}\n",
                &d);
    assert_null(s);
    assert_true(strstr(tu_first_error(&d), "2:18: error: unknown key 'alocated' in torch") != NULL);
    ml_diags_free(&d);
    ml_diags_init(&d);
    sched_load_set_torch_conf_check(pred_torch_conf_check);
    s = tu_load("world: 1\ntorch: {conf: 'garbage_collection_threshold:2'}\nsteps:\n  - alloc: {buf: a, bytes: 1}\n",
                &d);
    sched_load_set_torch_conf_check(NULL);
    assert_null(s);
    /* the column of the value inside the single-quoted string, PyTorch's own message */
    assert_true(strstr(tu_first_error(&d), "t.yaml:2:45: error: garbage_collect_threshold is invalid") != NULL);
    ml_diags_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_is_consistent),     cmocka_unit_test(torch_worked_example),
        cmocka_unit_test(torch_record_stream_event), cmocka_unit_test(torch_out_of_memory),
        cmocka_unit_test(torch_off_by_default),    cmocka_unit_test(torch_loader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
