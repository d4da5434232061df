/* SPDX-License-Identifier: MIT */
/* series.c — loads the inputs of plot, trace and diff (series.h). */
#include "report/series.h"
#include "report/measured.h"
#include "base/input.h"

#include <jansson.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const ml_mark no_mark = {0, 0};

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

uint32_t series_op_buffer(const plan_op *op) {
    switch (op->kind) {
    case OP_ALLOC: return op->u.alloc.buf;
    case OP_FREE: return op->u.free.buf;
    case OP_RELEASE: return op->u.release.buf;
    default: return SCHED_NO_SYM;
    }
}

bool series_rank_values(const series *s, int r, ml_mem_view view, uint64_t *pred, uint64_t *meas,
                        double *t) {
    const pred_rank *pr = &s->pred[r];
    size_t n = s->plans[r].n_ops;
    memset(pred, 0, n * sizeof *pred);
    for (size_t k = 0; k < pr->n_timeline; k++)
        if (pr->timeline[k].op < n)
            pred[pr->timeline[k].op] = pr->timeline[k].live[view];
    const report_source *src = &report_sources[view];
    const ml_measure *m = s->measured ? &s->measured[r] : NULL;
    if (!m || !m->n_samples || !src->has(m))
        return false;   /* no backend measures the series, or this run did not */
    bool *seen = ml_xcalloc(n + 1, sizeof *seen);
    for (size_t k = 0; k < m->n_samples; k++) {
        const ml_sample *sm = &m->samples[k];
        int64_t v;
        if (sm->op >= n || !src->value(sm, &v))
            continue;
        if (meas)
            meas[sm->op] = v > 0 ? (uint64_t)v : 0;
        if (t)
            t[sm->op] = sm->t;
        seen[sm->op] = true;
    }
    for (size_t k = 0; k < n; k++)
        if (!seen[k]) {
            if (meas)
                meas[k] = k ? meas[k - 1] : 0;
            if (t)
                t[k] = k ? t[k - 1] : 0;
        }
    free(seen);
    return true;
}

void series_live_bytes_at(const rank_plan *p, size_t op, uint64_t *bytes) {
    uint32_t *chunks = calloc(p->s->syms[SYM_BUFFER].n + 1, sizeof *chunks);
    memset(bytes, 0, p->s->syms[SYM_BUFFER].n * sizeof *bytes);
    for (size_t k = 0; k <= op && k < p->n_ops; k++) {
        const plan_op *o = &p->ops[k];
        if (o->kind == OP_ALLOC) {
            bytes[o->u.alloc.buf] = o->u.alloc.bytes;
            chunks[o->u.alloc.buf] = o->u.alloc.chunks;
        } else if (o->kind == OP_FREE) {
            bytes[o->u.free.buf] = 0;
        } else if (o->kind == OP_RELEASE && chunks[o->u.release.buf] > 1) {
            /* Chunks are equal (docs/schedule.md); one is kept. */
            bytes[o->u.release.buf] /= chunks[o->u.release.buf];
            chunks[o->u.release.buf] = 1;
        }
    }
    free(chunks);
}

void series_op_label(const rank_plan *p, const plan_op *op, char *buf, size_t len) {
    const sched *s = p->s;
    uint32_t b = series_op_buffer(op);
    if (op->kind == OP_COLL)
        snprintf(buf, len, "%s", ml_colls[op->u.coll.coll].name);
    else if (b != SCHED_NO_SYM)
        snprintf(buf, len, "%s %s", plan_op_names[op->kind], sched_sym_name(s, SYM_BUFFER, b));
    else if (op->kind == OP_REGION_BEGIN || op->kind == OP_REGION_END)
        snprintf(buf, len, "%s %s", plan_op_names[op->kind],
                 sched_sym_name(s, SYM_REGION, op->u.region.region));
    else
        snprintf(buf, len, "%s", plan_op_names[op->kind]);
}

int series_from_plan(sched *s, int plan_index, int world, const sched_params *p,
                     const pipeline_opts *o, series *out, ml_diags *d) {
    out->s = s;
    out->plan_index = plan_index;
    out->world = world;
    const char *plan = s->plans[plan_index].name ? s->plans[plan_index].name : "";
    snprintf(out->label, sizeof out->label, "%s%s%s", s->name ? s->name : "", *plan ? ":" : "", plan);
    int rc = pipeline_plan(s, plan_index, p, world, o, &out->item, d);
    out->plans = out->item.plans;
    out->pred = out->item.pred;
    return rc;
}

int series_from_sched(sched *s, int plan_index, int world, const sched_params *p, series *out,
                      ml_diags *d) {
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.expect = false;
    return series_from_plan(s, plan_index, world, p, &o, out, d);
}

/* Appends every plan of a YAML file (or the one after ':'). */
static int load_yaml(const char *word, const sched_params *p, ml_vec *out, ml_diags *d) {
    char path[4096];
    const char *plan;
    if (pipeline_split_word(word, path, sizeof path, &plan) != 0) {
        ml_error(d, word, no_mark, "input name too long");
        return -1;
    }
    sched_load_limits lim = sched_load_with(p);
    sched *s = sched_load_file(path, &lim, d);
    if (!s)
        return -1;
    int world = sched_world(s, p, d);
    if (world <= 0) {
        sched_free(s);
        return -1;
    }
    int only = -1;
    if (plan) {
        only = sched_plan_named(s, plan, d);
        if (only < 0) {
            sched_free(s);
            return -1;
        }
    }
    size_t first = out->n;
    for (uint32_t k = 0; k < s->n_plans; k++) {
        if (only >= 0 && (int)k != only)
            continue;
        series *sr = ml_vec_push(out);
        sr->source = strdup(word);
        sr->owns_sched = out->n == first + 1;
        if (series_from_sched(s, (int)k, world, p, sr, d) < 0)
            goto fail;
    }
    return 0;
fail:
    while (out->n > first)
        series_free(&ML_VEC_AT(out, series, --out->n));
    return -1;
}

/* Loads the schedule a result names: as written, else beside the result file. */
static sched *load_named(const char *result_path, const char *file, ml_diags *d) {
    if (access(file, R_OK) == 0 || file[0] == '/')
        return sched_load_file(file, NULL, d);
    char dir[4096], path[8192];
    snprintf(dir, sizeof dir, "%s", result_path);
    snprintf(path, sizeof path, "%s/%s", dirname(dir), file);
    return sched_load_file(path, NULL, d);
}

static int load_result(const char *word, const sched_params *p, ml_vec *out, ml_diags *d) {
    json_error_t je;
    ml_input in;   /* bounded, regular files or standard input only (base/input.h) */
    char err[512];
    if (ml_input_read(word, &in, err, sizeof err) != 0) {
        ml_error(d, word, no_mark, "%s", err);
        return -1;
    }
    json_t *root = json_loadb(in.data, in.len, 0, &je);
    ml_input_free(&in);
    if (!root) {
        ml_error(d, word, ((ml_mark){(uint32_t)je.line, (uint32_t)je.column}),
                 "cannot read result: %s", je.text);
        return -1;
    }
    json_t *list = json_object_get(root, "schedules"), *item;
    const char *backend = json_string_value(
        json_object_get(json_object_get(root, "provenance"), "backend"));
    bool torch_backend = backend && !strcmp(backend, "torch");
    size_t first = out->n, k;
    if (!json_is_array(list) || !json_array_size(list)) {
        ml_error(d, word, no_mark, "result has no 'schedules' list");
        goto fail;
    }
    json_array_foreach(list, k, item) {
        const char *file = json_string_value(json_object_get(item, "file"));
        const char *plan = json_string_value(json_object_get(item, "plan"));
        json_int_t world = json_integer_value(json_object_get(item, "world"));
        if (!file || world <= 0) {
            ml_error(d, word, no_mark, "schedule %zu of the result lacks 'file' or 'world'", k);
            goto fail;
        }
        sched *s = load_named(word, file, d);
        if (!s)
            goto fail;
        int plan_index = plan && *plan ? pipeline_plan_lookup(s, plan) : 0;
        series *sr = ml_vec_push(out);
        sr->source = strdup(word);
        sr->owns_sched = true;
        if (plan_index < 0) {
            sr->s = s;
            ml_error(d, word, no_mark, "no plan named '%s' in '%s'", plan, file);
            goto fail;
        }
        if (series_from_sched(s, plan_index, (int)world, p, sr, d) < 0)
            goto fail;
        sr->measured = ml_xcalloc((size_t)world, sizeof *sr->measured);
        size_t j;
        json_t *rank;
        json_array_foreach(json_object_get(item, "ranks"), j, rank) {
            json_int_t r = json_integer_value(json_object_get(rank, "rank"));
            if (r < 0 || r >= world || sr->measured[r].n_samples)
                continue;
            /* The result does not say which --set values the run used: the run's own
             * prediction must be the one made here, or the curves would not belong together. */
            json_t *peak = json_object_get(json_object_get(rank, "requested"), "peak");
            if (json_is_integer(peak) &&
                (uint64_t)json_integer_value(peak) != sr->pred[r].peak[VIEW_REQUESTED]) {
                ml_error(d, word, no_mark,
                         "the run of '%s' predicted a requested peak of %lld B on rank %lld, this "
                         "prediction %llu B: pass the run's --set values", file,
                         (long long)json_integer_value(peak), (long long)r,
                         (unsigned long long)sr->pred[r].peak[VIEW_REQUESTED]);
                goto fail;
            }
            if (!json_object_get(rank, "measured"))
                continue;   /* a predict or check result: nothing measured */
            /* The one reader of a rank's measurement (ir/measure.h), as the run wrote it. */
            char why[300];
            if (ml_measure_from_json(json_object_get(rank, "measured"), &sr->measured[r], why,
                                     sizeof why) != 0) {
                ml_error(d, word, no_mark, "schedule %zu, rank %lld of the result: %s", k,
                         (long long)r, why);
                goto fail;
            }
            sr->has_time = sr->has_time || sr->measured[r].n_samples > 0;
            /* A result written before measured.pool.caches: its pool was PyTorch's allocator
             * exactly when the torch backend ran (the async allocator's is cudaMemPool's). */
            json_t *pool = json_object_get(json_object_get(rank, "measured"), "pool");
            if (pool && !json_object_get(pool, "caches"))
                sr->measured[r].pool_caches = torch_backend;
        }
    }
    json_decref(root);
    return 0;
fail:
    json_decref(root);
    while (out->n > first)
        series_free(&ML_VEC_AT(out, series, --out->n));
    return -1;
}

int series_load(const char *word, const sched_params *p, ml_vec *out, ml_diags *d) {
    if (out->item_size != sizeof(series))
        ml_vec_init(out, sizeof(series));
    if (ends_with(word, ".json"))
        return load_result(word, p, out, d);
    return load_yaml(word, p, out, d);
}

void series_free(series *s) {
    for (int r = 0; s->measured && r < s->world; r++)
        ml_measure_free(&s->measured[r]);
    pipeline_item_free(&s->item);
    free(s->measured);
    free(s->source);
    if (s->owns_sched)
        sched_free(s->s);
    memset(s, 0, sizeof *s);
}

void series_vec_free(ml_vec *v) {
    /* The owner of a shared schedule is the first series of its file: free the others first. */
    for (size_t k = v->n; k-- > 0;)
        series_free(&ML_VEC_AT(v, series, k));
    ml_vec_free(v);
}
