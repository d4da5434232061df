/* SPDX-License-Identifier: MIT */
/* torchtree.c — the ordered sets PyTorch keeps as std::set<Block*>: BlockPool::blocks ordered
 * by BlockComparatorSize (stream, size, address) and BlockPool::unmapped ordered by
 * BlockComparatorAddress (stream, address).  A two-level B+tree of 128-bit keys (see
 * torchalloc_int.h): a count over the grouped leaf maxima, then one within a leaf; inserting
 * and erasing move at most TT_LEAF entries and allocate only when a leaf splits.  Streams
 * compare by the model's dense stream index where PyTorch compares cudaStream_t pointers;
 * searches never cross streams, so only the order of whole-pool walks (release, gc) can
 * differ, and their outcome does not. */
#include "torch/torchalloc_int.h"

#include <stdlib.h>
#include <string.h>

static inline tkey key_of(const torchalloc *ta, int kind, int32_t x) {
    const tblk *b = &ta->b[x];
    tkey k;
    k.hi = (uint64_t)b->stream << 40 | (kind == T_BLOCKS ? b->size >> 9 : 0);
    k.lo = b->addr;
    return k;
}

/* branch-free: the searches below are dominated by mispredicted compares otherwise */
__extension__ typedef unsigned __int128 u128;
static inline int kless(tkey a, tkey b) {
    return ((u128)a.hi << 64 | a.lo) < ((u128)b.hi << 64 | b.lo); /* cmp/sbb: no branch */
}

/* first index in arr[0..n) with arr[i] >= k (branch-free binary search) */
static inline size_t key_lb(const tkey *arr, size_t n, tkey k) {
    if (n == 0)
        return 0;
    const tkey *base = arr;
    while (n > 1) {
        size_t half = n / 2;
        base += half & -(size_t)kless(base[half - 1], k); /* a mask: gcc made `? half : 0` a branch */
        n -= half;
    }
    return (size_t)(base - arr) + (size_t)kless(*base, k);
}

void tt_init(ttree *t, int kind) {
    memset(t, 0, sizeof *t);
    memset(t->sum, 0xff, sizeof t->sum);
    t->kind = kind;
}

/* how many of arr[0..n) have a hi word below hi: every compare independent of the others */
static inline size_t count_less_hi(const tkey *arr, size_t n, uint64_t hi) {
    size_t c = 0;
#pragma GCC unroll 8
    for (size_t j = 0; j < n; j++)
        c += (size_t)(arr[j].hi < hi);
    return c;
}

/* how many of arr[0..n) are below k (128-bit compares, each independent of the others) */
static inline size_t count_less_key(const tkey *arr, size_t n, tkey k) {
    size_t c = 0;
#pragma GCC unroll 8
    for (size_t j = 0; j < n; j++)
        c += (size_t)kless(arr[j], k);
    return c;
}

/* sum[g] after max[] changed in group g */
static inline void sum_group(ttree *t, size_t g) {
    size_t last = g * TT_GROUP + TT_GROUP - 1;
    if (g < TT_NSUM)
        t->sum[g] = t->max[last < t->nleaf ? last : t->nleaf - 1];
}

/* every sum[] from group g on, after one leaf came or went there: the groups past the one
 * holding leaf nleaf (the last one's place before a removal) held sentinels and still do, so
 * the loop stops there (a loop over all TT_NSUM groups was 3% of the bench's instructions) */
static void sum_from(ttree *t, size_t g) {
    size_t end = t->nleaf / TT_GROUP + 1;
    if (end > TT_NSUM)
        end = TT_NSUM;
    for (; g < end; g++) {
        if (g * TT_GROUP < t->nleaf)
            sum_group(t, g);
        else
            memset(&t->sum[g], 0xff, sizeof t->sum[g]);
    }
}

/* sum[g] is max[] of the group's last leaf in use, so only a change there changes it (calling
 * sum_group on every change: 4.6% more of the bench's instructions, callgrind at 1 M events) */
static inline void set_max(ttree *t, size_t li, tkey k) {
    t->max[li] = k;
    size_t g = li / TT_GROUP;
    if (g < TT_NSUM && (li % TT_GROUP == TT_GROUP - 1 || li + 1 == t->nleaf))
        t->sum[g] = k;
}

void tt_free(ttree *t) {
    for (size_t i = 0; i < t->nleaf; i++)
        free(t->leaf[i]);
    while (t->spare) {
        tleaf *l = t->spare;
        t->spare = l->next_spare;
        free(l);
    }
    free(t->leaf);
    free(t->max);
    memset(t, 0, sizeof *t);
}

/* the first group whose largest key has a hi word >= hi (sets of up to TT_GROUP * TT_NSUM
 * leaves) */
static inline size_t group_lb_hi(const ttree *t, uint64_t hi) {
    /* up to TT_SUM_FIXED groups: a count over that many, the sentinels past the groups in use
     * never below hi, straight code where a loop to the number in use ended in a mispredicted
     * branch and a remainder (that loop: a tenth of the bench's instructions; this: 2.9% fewer
     * in all, callgrind at 1 M events) */
    size_t ng = (t->nleaf + TT_GROUP - 1) / TT_GROUP;
    return ng <= TT_SUM_FIXED ? count_less_hi(t->sum, TT_SUM_FIXED, hi) : count_less_hi(t->sum, ng, hi);
}

/* leaf_lb for the key (hi, 0), the least key of its hi word: a key is below it exactly when
 * its hi word is, so one 64-bit compare a key does (the searches by stream and size, about
 * half of all leaf searches, half the instructions of the 128-bit compares) */
static size_t leaf_lb_hi(const ttree *t, uint64_t hi) {
    if (t->nleaf > TT_GROUP * TT_NSUM) {
        tkey k = {hi, 0};
        return key_lb(t->max, t->nleaf, k);
    }
    size_t g = group_lb_hi(t, hi);
    if (g * TT_GROUP >= t->nleaf)
        return t->nleaf;
    size_t li = g * TT_GROUP + count_less_hi(t->max + g * TT_GROUP, TT_GROUP, hi);
    return li < t->nleaf ? li : t->nleaf;
}

/* first leaf whose max >= k; nleaf if none */
static size_t leaf_lb(const ttree *t, tkey k) {
    if (t->nleaf > TT_GROUP * TT_NSUM)
        return key_lb(t->max, t->nleaf, k);
    /* the group by hi words (every key of the groups before is below k), then a count of the
     * maxima below k in it, 128-bit compares without a branch: a loop stepping over the maxima
     * of k's hi word with a smaller lo (equal sizes, common in the bench) mispredicted its end
     * (270 k of 3.6 M mispredicts in 1 M events, callgrind --branch-sim).  The loop after it
     * steps on only when the whole group is below k. */
    size_t g = group_lb_hi(t, k.hi);
    if (g * TT_GROUP >= t->nleaf)
        return t->nleaf;
    size_t li = g * TT_GROUP + count_less_key(t->max + g * TT_GROUP, TT_GROUP, k);
    while (li < t->nleaf && kless(t->max[li], k))
        li++;
    return li < t->nleaf ? li : t->nleaf;
}

/* first slot with key >= k: count the smaller hi words over every slot (the sentinels are
 * never smaller: k.hi < UINT64_MAX); where the slot found has k's hi word (equal sizes), add
 * the count of keys of that hi word with a smaller lo.  A loop stepping over those
 * mispredicted its end: 234 k of 3.6 M mispredicts in 1 M events of tests/bench, 193 k for the
 * one test here (callgrind --branch-sim); 128-bit compares over every slot mispredict none but
 * took 10% more instructions and no less time. */
static int32_t slot_lb(const tleaf *l, tkey k) {
    int32_t pos = 0;
#pragma GCC unroll 16 /* straight code: -O2 would keep a loop with a branch per slot */
    for (int32_t j = 0; j < TT_LEAF; j++)
        pos += l->hi[j] < k.hi;
    if (l->hi[pos] == k.hi) {
        int32_t eq = 0;
#pragma GCC unroll 16
        for (int32_t j = 0; j < TT_LEAF; j++)
            eq += (l->hi[j] == k.hi) & (l->lo[j] < k.lo);
        pos += eq;
    }
    return pos;
}

/* cache-line aligned: a search's 8 hi words are then one line, not two (malloc aligns to 16) */
#define TT_LINE 64
#define TT_LEAF_BYTES ((sizeof(tleaf) + TT_LINE - 1) / TT_LINE * TT_LINE) /* aligned_alloc: a multiple */
/* A leaf from the tree's spares (emptied leaves kept for reuse: aligned_alloc and free cost
 * about 400 instructions a leaf, callgrind), else a new one. */
static tleaf *new_leaf(ttree *t) {
    tleaf *l = t->spare;
    if (l) {
        t->spare = l->next_spare;
    } else {
        l = aligned_alloc(TT_LINE, TT_LEAF_BYTES);
        if (!l)
            ml_out_of_memory(TT_LEAF_BYTES);
    }
    l->n = 0;
    memset(l->hi, 0xff, sizeof l->hi);
    memset(l->lo, 0xff, sizeof l->lo);
    memset(l->v, 0xff, sizeof l->v); /* -1 */
    return l;
}

static inline tkey key_at(const tleaf *l, int32_t j) {
    tkey k = {l->hi[j], l->lo[j]};
    return k;
}

/* memmove(dst, src, bytes) for a constant multiple of 16 bytes: every 16 bytes are loaded
 * before any is stored, in 16-byte registers.  memmove's call and its branches on the length
 * cost more than the 128 + 128 + 64 bytes a shift moves. */
typedef uint64_t tt_v2 __attribute__((vector_size(16)));
static inline void move_slots(void *dst, const void *src, size_t bytes) {
    tt_v2 r[TT_LEAF];
#pragma GCC unroll 16
    for (size_t i = 0; i < bytes / 16; i++)
        memcpy(&r[i], (const char *)src + 16 * i, sizeof r[i]);
#pragma GCC unroll 16
    for (size_t i = 0; i < bytes / 16; i++)
        memcpy((char *)dst + 16 * i, &r[i], sizeof r[i]);
}

/* Open slot s (n < TT_LEAF): slots s.. move up by one.  A fixed TT_LEAF slots move, into the
 * padding at worst, which so receives only sentinels: slots n.. hold them. */
static void shift_up(tleaf *l, int32_t s) {
    move_slots(l->hi + s + 1, l->hi + s, TT_LEAF * sizeof *l->hi);
    move_slots(l->lo + s + 1, l->lo + s, TT_LEAF * sizeof *l->lo);
    move_slots(l->v + s + 1, l->v + s, TT_LEAF * sizeof *l->v);
}

/* Close slot s: slots s+1.. move down by one (a fixed TT_LEAF of them, reading the padding at
 * worst); slot n - 1 receives the sentinel that was in slot n. */
static void shift_down(tleaf *l, int32_t s) {
    move_slots(l->hi + s, l->hi + s + 1, TT_LEAF * sizeof *l->hi);
    move_slots(l->lo + s, l->lo + s + 1, TT_LEAF * sizeof *l->lo);
    move_slots(l->v + s, l->v + s + 1, TT_LEAF * sizeof *l->v);
}

static void add_leaf(ttree *t, size_t at, tleaf *l) {
    if (t->nleaf == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : TT_GROUP;
        tleaf **nl = ml_xrealloc(t->leaf, cap * sizeof *nl);
        tkey *nm = ml_xrealloc(t->max, cap * sizeof *nm);
        memset(nm + t->cap, 0xff, (cap - t->cap) * sizeof *nm); /* sentinels */
        t->leaf = nl;
        t->max = nm;
        t->cap = cap;
    }
    memmove(t->leaf + at + 1, t->leaf + at, (t->nleaf - at) * sizeof *t->leaf);
    memmove(t->max + at + 1, t->max + at, (t->nleaf - at) * sizeof *t->max);
    t->leaf[at] = l;
    t->nleaf++;
    for (size_t j = at; j < t->nleaf; j++)
        t->leaf[j]->idx = (int32_t)j;
}

void tt_insert(torchalloc *ta, ttree *t, int32_t x) {
    tkey k = key_of(ta, t->kind, x);
    ta->b[x].in_tree = (uint8_t)(t->kind + 1);
    if (t->nleaf == 0) {
        add_leaf(t, 0, new_leaf(t));
        set_max(t, 0, k); /* k becomes the only key (the sentinels would do; say it) */
    }
    size_t li = leaf_lb(t, k);
    if (li == t->nleaf)
        li--;
    tleaf *l = t->leaf[li];
    if (l->n == TT_LEAF) { /* split in halves */
        tleaf *r = new_leaf(t);
        r->n = TT_LEAF / 2;
        memcpy(r->hi, l->hi + TT_LEAF / 2, (TT_LEAF / 2) * sizeof(uint64_t));
        memcpy(r->lo, l->lo + TT_LEAF / 2, (TT_LEAF / 2) * sizeof(uint64_t));
        memcpy(r->v, l->v + TT_LEAF / 2, (TT_LEAF / 2) * sizeof(int32_t));
        for (int32_t j = 0; j < r->n; j++)
            ta->b[r->v[j]].leaf = r;
        l->n = TT_LEAF / 2;
        memset(l->hi + TT_LEAF / 2, 0xff, (TT_LEAF / 2) * sizeof(uint64_t));
        memset(l->lo + TT_LEAF / 2, 0xff, (TT_LEAF / 2) * sizeof(uint64_t));
        memset(l->v + TT_LEAF / 2, 0xff, (TT_LEAF / 2) * sizeof(int32_t));
        add_leaf(t, li + 1, r);
        t->max[li] = key_at(l, l->n - 1);
        t->max[li + 1] = key_at(r, r->n - 1);
        sum_from(t, li / TT_GROUP);
        if (kless(t->max[li], k)) {
            li++;
            l = r;
        }
    }
    int32_t s = slot_lb(l, k);
    shift_up(l, s);
    l->hi[s] = k.hi;
    l->lo[s] = k.lo;
    l->v[s] = x;
    l->n++;
    ta->b[x].leaf = l;
    if (s == l->n - 1) /* a new largest key; else max[li] (the leaf's last key) stands */
        set_max(t, li, k);
}

/* leaf and slot of block x (which is in t) */
static int locate(const torchalloc *ta, const ttree *t, int32_t x, size_t *li, int32_t *s) {
    const tleaf *l = ta->b[x].leaf;
    if (!l || (size_t)l->idx >= t->nleaf || t->leaf[l->idx] != l)
        return 0;
    /* x is in a slot at most once: the sum of slot numbers where v == x is its slot, taken
     * four slots a compare in 16-byte vectors (half the instructions of a scalar scan) */
    typedef int32_t v4 __attribute__((vector_size(16)));
    v4 acc = {0, 0, 0, 0}, idx = {0, 1, 2, 3}, step = {4, 4, 4, 4}, want = {x, x, x, x};
#pragma GCC unroll 16
    for (int32_t k = 0; k < TT_LEAF; k += 4) {
        v4 vk;
        memcpy(&vk, l->v + k, sizeof vk);
        acc += (vk == want) & idx;
        idx += step;
    }
    int32_t j = acc[0] + acc[1] + acc[2] + acc[3];
    if (l->v[j] != x)
        return 0;
    *li = (size_t)l->idx;
    *s = j;
    return 1;
}

static void erase_at(ttree *t, size_t li, int32_t s) {
    tleaf *l = t->leaf[li];
    shift_down(l, s);
    l->n--;
    if (l->n > 0) {
        if (s == l->n) /* the largest key went: else max[li] stands */
            set_max(t, li, key_at(l, l->n - 1));
    } else if (t->nleaf > 1) { /* the last leaf stays, empty, so a 0/1-element set never allocates */
        l->next_spare = t->spare;
        t->spare = l;
        memmove(t->leaf + li, t->leaf + li + 1, (t->nleaf - li - 1) * sizeof *t->leaf);
        memmove(t->max + li, t->max + li + 1, (t->nleaf - li - 1) * sizeof *t->max);
        t->nleaf--;
        memset(&t->max[t->nleaf], 0xff, sizeof t->max[t->nleaf]); /* a sentinel again */
        sum_from(t, li / TT_GROUP);
        for (size_t j = li; j < t->nleaf; j++)
            t->leaf[j]->idx = (int32_t)j;
    }
}

void tt_erase(torchalloc *ta, ttree *t, int32_t x) {
    size_t li;
    int32_t s;
    ta->b[x].in_tree = 0;
    if (!locate(ta, t, x, &li, &s))
        ml_internal_error("torch model: block %d's key changed while it was in a free set", x);
    erase_at(t, li, s);
}

void tt_erase_cur(torchalloc *ta, ttree *t, const tcur *c, int32_t x) {
    ta->b[x].in_tree = 0;
    erase_at(t, c->li, c->s);
}

/* the first key at or after (hi, 0); the slot is the count of smaller hi words (slot_lb's
 * step over equal hi words with a smaller lo never steps for lo 0) */
static int32_t at_or_after(const ttree *t, uint64_t hi, tcur *c) {
    size_t i = leaf_lb_hi(t, hi);
    while (i < t->nleaf) {
        const tleaf *l = t->leaf[i];
        int32_t j = 0;
#pragma GCC unroll 16
        for (int32_t m = 0; m < TT_LEAF; m++)
            j += l->hi[m] < hi;
        if (j < l->n) {
            if (c) {
                c->li = i;
                c->s = j;
            }
            return l->v[j];
        }
        i++;
    }
    return -1;
}

int32_t tt_lower_size(const torchalloc *ta, const ttree *t, uint32_t stream, uint64_t size) {
    (void)ta;
    return at_or_after(t, (uint64_t)stream << 40 | size >> 9, NULL);
}

int32_t tt_lower_size_cur(const torchalloc *ta, const ttree *t, uint32_t stream, uint64_t size, tcur *c) {
    (void)ta;
    return at_or_after(t, (uint64_t)stream << 40 | size >> 9, c);
}

int32_t tt_lower_stream(const torchalloc *ta, const ttree *t, uint32_t stream) {
    (void)ta;
    return at_or_after(t, (uint64_t)stream << 40, NULL);
}

int32_t tt_next(const torchalloc *ta, const ttree *t, int32_t x) {
    size_t li;
    int32_t s;
    if (!locate(ta, t, x, &li, &s))
        return -1;
    if (s + 1 < t->leaf[li]->n)
        return t->leaf[li]->v[s + 1];
    for (li++; li < t->nleaf; li++)
        if (t->leaf[li]->n)
            return t->leaf[li]->v[0];
    return -1;
}

int32_t tt_prev(const torchalloc *ta, const ttree *t, int32_t x) {
    size_t li;
    int32_t s;
    if (!locate(ta, t, x, &li, &s))
        return -1;
    if (s > 0)
        return t->leaf[li]->v[s - 1];
    while (li-- > 0)
        if (t->leaf[li]->n)
            return t->leaf[li]->v[t->leaf[li]->n - 1];
    return -1;
}

int32_t tt_max(const ttree *t) {
    for (size_t li = t->nleaf; li-- > 0;)
        if (t->leaf[li]->n)
            return t->leaf[li]->v[t->leaf[li]->n - 1];
    return -1;
}

void tt_reserve_scratch(torchalloc *ta, size_t n) {
    if (n <= ta->capscratch)
        return;
    size_t cap = ta->capscratch ? ta->capscratch : 64;
    while (cap < n)
        cap *= 2;
    ta->scratch = ml_xrealloc(ta->scratch, cap * sizeof *ta->scratch);
    ta->capscratch = cap;
}

size_t tt_collect(torchalloc *ta, const ttree *t, size_t at) {
    size_t count = 0;
    for (size_t li = 0; li < t->nleaf; li++) {
        const tleaf *l = t->leaf[li];
        tt_reserve_scratch(ta, at + count + (size_t)l->n);
        for (int32_t j = 0; j < l->n; j++)
            ta->scratch[at + count++] = l->v[j];
    }
    return count;
}
