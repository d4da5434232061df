/* torchtree.c — the ordered sets PyTorch keeps as std::set<Block*>: BlockPool::blocks ordered
 * by BlockComparatorSize (stream, size, address) and BlockPool::unmapped ordered by
 * BlockComparatorAddress (stream, address).  Treaps over block indices with the node fields
 * inside the block, so inserting and erasing allocate nothing.  Streams compare by the model's
 * stream id where PyTorch compares cudaStream_t pointers; searches never cross streams, so only
 * the order of whole-pool walks (release, gc) can differ, and their outcome does not. */
#include "torch/torchalloc_int.h"

#include <stdlib.h>

static int bcmp3(const torchalloc *ta, int kind, int32_t x, int32_t y) {
    const tblk *a = &ta->b[x], *c = &ta->b[y];
    if (a->stream != c->stream)
        return a->stream < c->stream ? -1 : 1;
    if (kind == T_BLOCKS && a->size != c->size)
        return a->size < c->size ? -1 : 1;
    if (a->addr != c->addr)
        return a->addr < c->addr ? -1 : 1;
    return 0;
}

/* Splits n into keys < x and keys > x. */
static void split(torchalloc *ta, int kind, int32_t n, int32_t x, int32_t *lo, int32_t *hi) {
    while (n >= 0) {
        if (bcmp3(ta, kind, n, x) < 0) {
            *lo = n;
            lo = &ta->b[n].r;
            n = ta->b[n].r;
        } else {
            *hi = n;
            hi = &ta->b[n].l;
            n = ta->b[n].l;
        }
    }
    *lo = *hi = -1;
}

static int32_t merge(torchalloc *ta, int32_t a, int32_t c) {
    int32_t root = -1, *link = &root;
    while (a >= 0 && c >= 0) {
        if (ta->b[a].prio > ta->b[c].prio) {
            *link = a;
            link = &ta->b[a].r;
            a = ta->b[a].r;
        } else {
            *link = c;
            link = &ta->b[c].l;
            c = ta->b[c].l;
        }
    }
    *link = a >= 0 ? a : c;
    return root;
}

static uint32_t rnd(torchalloc *ta) {
    uint32_t x = ta->rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return ta->rng = x;
}

void tt_insert(torchalloc *ta, int kind, int32_t *root, int32_t x) {
    tblk *bx = &ta->b[x];
    bx->prio = rnd(ta);
    bx->l = bx->r = -1;
    bx->in_tree = (uint8_t)(kind + 1);
    int32_t *link = root;
    while (*link >= 0 && ta->b[*link].prio >= bx->prio)
        link = bcmp3(ta, kind, x, *link) < 0 ? &ta->b[*link].l : &ta->b[*link].r;
    split(ta, kind, *link, x, &bx->l, &bx->r);
    *link = x;
}

void tt_erase(torchalloc *ta, int kind, int32_t *root, int32_t x) {
    int32_t *link = root;
    while (*link >= 0 && *link != x)
        link = bcmp3(ta, kind, x, *link) < 0 ? &ta->b[*link].l : &ta->b[*link].r;
    if (*link == x)
        *link = merge(ta, ta->b[x].l, ta->b[x].r);
    ta->b[x].in_tree = 0;
    ta->b[x].l = ta->b[x].r = -1;
}

int32_t tt_lower_size(const torchalloc *ta, int32_t n, uint32_t stream, uint64_t size) {
    int32_t best = -1;
    while (n >= 0) {
        const tblk *a = &ta->b[n];
        int ge = a->stream != stream ? a->stream > stream : a->size >= size;
        if (ge) {
            best = n;
            n = a->l;
        } else {
            n = a->r;
        }
    }
    return best;
}

int32_t tt_lower_stream(const torchalloc *ta, int32_t n, uint32_t stream) {
    int32_t best = -1;
    while (n >= 0) {
        if (ta->b[n].stream >= stream) {
            best = n;
            n = ta->b[n].l;
        } else {
            n = ta->b[n].r;
        }
    }
    return best;
}

int32_t tt_next(const torchalloc *ta, int kind, int32_t n, int32_t x) {
    int32_t best = -1;
    while (n >= 0) {
        if (bcmp3(ta, kind, n, x) > 0) {
            best = n;
            n = ta->b[n].l;
        } else {
            n = ta->b[n].r;
        }
    }
    return best;
}

int32_t tt_prev(const torchalloc *ta, int kind, int32_t n, int32_t x) {
    int32_t best = -1;
    while (n >= 0) {
        if (bcmp3(ta, kind, n, x) < 0) {
            best = n;
            n = ta->b[n].r;
        } else {
            n = ta->b[n].l;
        }
    }
    return best;
}

int32_t tt_max(const torchalloc *ta, int32_t n) {
    if (n < 0)
        return -1;
    while (ta->b[n].r >= 0)
        n = ta->b[n].r;
    return n;
}

int tt_reserve_scratch(torchalloc *ta, size_t n) {
    if (n <= ta->capscratch)
        return 0;
    size_t cap = ta->capscratch ? ta->capscratch : 64;
    while (cap < n)
        cap *= 2;
    int32_t *p = realloc(ta->scratch, cap * sizeof *p);
    if (!p)
        return -1;
    ta->scratch = p;
    ta->capscratch = cap;
    return 0;
}

size_t tt_collect(torchalloc *ta, int32_t root, size_t at) {
    /* iterative in-order walk with an explicit stack kept past `at` in scratch's tail */
    size_t count = 0, depth = 0;
    int32_t stack[128]; /* treap depth is O(log n); 128 is far past any real depth */
    int32_t n = root;
    for (;;) {
        while (n >= 0) {
            if (depth == 128)
                return (size_t)-1;
            stack[depth++] = n;
            n = ta->b[n].l;
        }
        if (depth == 0)
            break;
        n = stack[--depth];
        if (tt_reserve_scratch(ta, at + count + 1))
            return (size_t)-1;
        ta->scratch[at + count++] = n;
        n = ta->b[n].r;
    }
    return count;
}
