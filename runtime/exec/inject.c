/* SPDX-License-Identifier: MIT */
/* inject.c — runtime fault injection (inject.h). */
#include "exec/inject.h"
#include "exec/watch.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One row per kind: the rest of the file never switches on the item's name. */
typedef enum { INJ_FAIL_ALLOC, INJ_KILL, INJ_DELAY, INJ_COUNT } inj_kind;

static const struct {
    const char *name;
    bool rank_optional;     /* "K" alone means every rank */
    bool has_seconds;       /* ":S" allowed */
    const char *example;
} inj_kinds[INJ_COUNT] = {
    [INJ_FAIL_ALLOC] = {"fail-alloc", true, false, "fail-alloc=1@0"},
    [INJ_KILL] = {"kill", false, false, "kill=2@3"},
    [INJ_DELAY] = {"delay", false, true, "delay=3@3:20"},
};

/* A non-negative decimal of at most INT_MAX in [s, e). */
static bool parse_index(const char *s, const char *e, long *out) {
    if (s == e || e - s > 10)
        return false;
    long v = 0;
    for (const char *p = s; p < e; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    if (v > INT_MAX)
        return false;
    *out = v;
    return true;
}

static int parse_item(const char *item, size_t n, rt_options *o, bool seen[INJ_COUNT], char *err,
                      size_t len) {
    const char *end = item + n, *eq = memchr(item, '=', n);
    int kind = -1;
    for (int k = 0; eq && k < INJ_COUNT; k++)
        if (strlen(inj_kinds[k].name) == (size_t)(eq - item) &&
            !strncmp(item, inj_kinds[k].name, (size_t)(eq - item)))
            kind = k;
    if (kind < 0) {
        snprintf(err, len, "unknown fault '%.*s' (fail-alloc=[RANK@]K, kill=RANK@OP or "
                 "delay=RANK@OP|init[:SECONDS])", (int)n, item);
        return -1;
    }
    if (seen[kind]) {
        snprintf(err, len, "'%s' is given twice", inj_kinds[kind].name);
        return -1;
    }
    seen[kind] = true;
    const char *v = eq + 1, *at = memchr(v, '@', (size_t)(end - v));
    const char *colon = memchr(v, ':', (size_t)(end - v));
    const char *k_end = colon ? colon : end;
    long rank = -1, index = -1;
    double seconds = 0;
    bool ok = true;
    bool at_init = at && k_end - (at + 1) == 4 && !strncmp(at + 1, "init", 4);
    if (at_init && kind != INJ_DELAY) {
        snprintf(err, len, "'%.*s': only delay takes @init (delay=RANK@init[:SECONDS])", (int)n,
                 item);
        return -1;
    }
    if (at_init) {
        ok = parse_index(v, at, &rank);
    } else if (at) {
        ok = parse_index(v, at, &rank) && parse_index(at + 1, k_end, &index);
    } else {
        ok = inj_kinds[kind].rank_optional && parse_index(v, k_end, &index);
    }
    if (ok && colon) {
        char *stop = NULL;
        char num[64];
        size_t cn = (size_t)(end - colon - 1);
        ok = inj_kinds[kind].has_seconds && cn > 0 && cn < sizeof num;
        if (ok) {
            memcpy(num, colon + 1, cn);
            num[cn] = '\0';
            errno = 0;
            seconds = strtod(num, &stop);
            ok = !errno && *stop == '\0' && isfinite(seconds) && seconds > 0 && seconds <= 1e6;
        }
    }
    if (!ok) {
        snprintf(err, len, "'%.*s' is not %s=%s (e.g. %s)", (int)n, item, inj_kinds[kind].name,
                 kind == INJ_FAIL_ALLOC ? "[RANK@]K" : kind == INJ_KILL ? "RANK@OP"
                                                                       : "RANK@OP[:SECONDS]",
                 inj_kinds[kind].example);
        return -1;
    }
    switch ((inj_kind)kind) {
    case INJ_FAIL_ALLOC:
        o->fail_alloc_rank = (int)rank;
        o->fail_alloc_k = index;
        break;
    case INJ_KILL:
        o->kill_rank = (int)rank;
        o->kill_step = (int)index;
        break;
    default:
        o->delay_rank = (int)rank;
        o->delay_step = at_init ? -1 : (int)index;
        o->delay_at_init = at_init;
        o->delay_s = seconds;
        break;
    }
    return 0;
}

int rt_inject_parse(const char *spec, rt_options *o, char *err, size_t len) {
    bool seen[INJ_COUNT] = {false};
    const char *p = spec;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == 0) {
            snprintf(err, len, "empty item in '%s'", spec);
            return -1;
        }
        if (parse_item(p, n, o, seen, err, len) != 0)
            return -1;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

bool rt_inject_any(const rt_options *o) {
    return o->fail_alloc_k >= 0 || o->kill_step >= 0 || o->delay_step >= 0 || o->delay_at_init;
}

/* One item in SPEC syntax, "" when that kind is off. */
static void item_text(const rt_options *o, inj_kind kind, char *buf, size_t len) {
    buf[0] = '\0';
    if (kind == INJ_FAIL_ALLOC && o->fail_alloc_k >= 0 && o->fail_alloc_rank >= 0)
        snprintf(buf, len, "fail-alloc=%d@%ld", o->fail_alloc_rank, o->fail_alloc_k);
    else if (kind == INJ_FAIL_ALLOC && o->fail_alloc_k >= 0)
        snprintf(buf, len, "fail-alloc=%ld", o->fail_alloc_k);
    else if (kind == INJ_KILL && o->kill_step >= 0)
        snprintf(buf, len, "kill=%d@%d", o->kill_rank, o->kill_step);
    else if (kind == INJ_DELAY && o->delay_at_init && o->delay_s > 0)
        snprintf(buf, len, "delay=%d@init:%g", o->delay_rank, o->delay_s);
    else if (kind == INJ_DELAY && o->delay_at_init)
        snprintf(buf, len, "delay=%d@init", o->delay_rank);
    else if (kind == INJ_DELAY && o->delay_step >= 0 && o->delay_s > 0)
        snprintf(buf, len, "delay=%d@%d:%g", o->delay_rank, o->delay_step, o->delay_s);
    else if (kind == INJ_DELAY && o->delay_step >= 0)
        snprintf(buf, len, "delay=%d@%d", o->delay_rank, o->delay_step);
}

void rt_inject_text(const rt_options *o, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < INJ_COUNT; k++) {
        char item[80];
        item_text(o, (inj_kind)k, item, sizeof item);
        if (item[0] && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "," : "", item);
    }
}

static size_t count_allocs(const rank_plan *p) {
    size_t n = 0;
    for (size_t k = 0; k < p->n_ops; k++)
        n += p->ops[k].kind == OP_ALLOC;
    return n;
}

/* The largest op count (or alloc count) of the ranks a fault targets (rank < 0: every rank). */
static size_t most(const rank_plan *plans, int world, int rank, bool allocs) {
    size_t best = 0;
    for (int r = 0; r < world; r++) {
        if (rank >= 0 && r != rank)
            continue;
        size_t have = allocs ? count_allocs(&plans[r]) : plans[r].n_ops;
        best = have > best ? have : best;
    }
    return best;
}

int rt_inject_check(const rt_options *o, const rank_plan *const *plans, const int *worlds,
                    size_t n, char *err, size_t len) {
    const struct { int rank; long index; inj_kind kind; } items[] = {
        {o->fail_alloc_rank, o->fail_alloc_k, INJ_FAIL_ALLOC},
        {o->kill_rank, o->kill_step, INJ_KILL},
        {o->delay_rank, o->delay_step, INJ_DELAY},
    };
    for (size_t i = 0; o->delay_at_init && i < n; i++)
        if (o->delay_rank >= worlds[i]) {
            char spec[80];
            item_text(o, INJ_DELAY, spec, sizeof spec);
            snprintf(err, len, "%s: rank %d is outside the world of %d ranks", spec, o->delay_rank,
                     worlds[i]);
            return -1;
        }
    for (size_t k = 0; k < ML_ARRAY_LEN(items); k++) {
        if (items[k].index < 0)
            continue;
        char spec[80];
        item_text(o, items[k].kind, spec, sizeof spec);
        bool allocs = items[k].kind == INJ_FAIL_ALLOC;
        size_t have = 0;
        for (size_t i = 0; i < n; i++) {
            if (items[k].rank >= worlds[i]) {
                snprintf(err, len, "%s: rank %d is outside the world of %d ranks", spec,
                         items[k].rank, worlds[i]);
                return -1;
            }
            size_t m = most(plans[i], worlds[i], items[k].rank, allocs);
            have = m > have ? m : have;
        }
        if ((size_t)items[k].index >= have) {
            const char *what = allocs ? (have == 1 ? "alloc" : "allocs")
                                      : (have == 1 ? "op" : "ops");
            char range[48] = "";
            if (have > 1)
                snprintf(range, sizeof range, " (0 to %zu)", have - 1);
            else if (have == 1)
                snprintf(range, sizeof range, " (only 0)");
            if (items[k].rank >= 0)
                snprintf(err, len, "%s is never reached: rank %d has %zu %s%s", spec,
                         items[k].rank, have, what, range);
            else
                snprintf(err, len, "%s is never reached: no rank has more than %zu %s%s", spec,
                         have, what, range);
            return -1;
        }
    }
    return 0;
}

bool rt_inject_alloc_fails(const rt_rank *r, long k, char *err, size_t len) {
    const rt_options *o = r->opt;
    if (o->fail_alloc_k < 0 || k != o->fail_alloc_k ||
        (o->fail_alloc_rank >= 0 && o->fail_alloc_rank != r->rank))
        return false;
    char spec[80];
    item_text(o, INJ_FAIL_ALLOC, spec, sizeof spec);
    snprintf(err, len, "injected fault %s (alloc %ld of rank %d)", spec, k, r->rank);
    return true;
}

/* "FILE:L:C: KIND: rank R VERB at op K (NAME)" — where this rank stands, before a kill or delay. */
static void say(const rt_rank *r, inj_kind kind, const char *level, const char *verb,
                const char *extra) {
    const plan_op *op = &r->plan->ops[r->pc];
    ml_mark m = plan_op_mark(op);
    char spec[80];
    item_text(r->opt, kind, spec, sizeof spec);
    fprintf(stderr,
            "%s:%u:%u: %s: rank %d %s at op %zu (%s) by injected fault %s%s; live requested bytes %" PRIu64
            "\n",
            r->plan->s->file, m.line, m.col, level, r->rank, verb, r->pc, plan_op_name(op), spec,
            extra, r->acct.live);
    fflush(stderr);
}

void rt_inject_before_op(const rt_rank *r) {
    const rt_options *o = r->opt;
    if (r->pc >= r->plan->n_ops)
        return;
    if (o->kill_step >= 0 && r->rank == o->kill_rank && r->pc == (size_t)o->kill_step) {
        say(r, INJ_KILL, "error", "killed", "");
        fflush(stdout);
        /* A crash, not an exit: nothing is cleaned up, MPI is not finalized. */
        raise(SIGKILL);
        _exit(128 + SIGKILL);
    }
    if (o->delay_step >= 0 && r->rank == o->delay_rank && r->pc == (size_t)o->delay_step) {
        double s = o->delay_s > 0 ? o->delay_s : o->timeout_s + RT_INJECT_PAST_S;
        char extra[120];
        snprintf(extra, sizeof extra, " for %g s, %s the %g s deadline of its peers", s,
                 s > o->timeout_s ? "past" : "within", o->timeout_s);
        say(r, INJ_DELAY, "note", "delayed", extra);
        rt_watch_sleep(s);   /* a delayed rank still ends with memlife (watch.h) */
    }
}

void rt_inject_before_init(const rt_options *o, int rank, const char *what) {
    if (!o->delay_at_init || rank != o->delay_rank)
        return;
    double s = o->delay_s > 0 ? o->delay_s : o->timeout_s + RT_INJECT_PAST_S;
    char spec[80];
    item_text(o, INJ_DELAY, spec, sizeof spec);
    fprintf(stderr, "note: rank %d delayed before %s by injected fault %s for %g s, %s the %g s "
            "deadline of its peers\n", rank, what, spec, s, s > o->timeout_s ? "past" : "within",
            o->timeout_s);
    fflush(stderr);
    rt_watch_sleep(s);
}
