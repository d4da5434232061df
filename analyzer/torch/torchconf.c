/* SPDX-License-Identifier: MIT */
/* torchconf.c — PYTORCH_CUDA_ALLOC_CONF parsing and the size rules that depend only on it.
 *
 * The parser follows PyTorch 2.11's two passes: c10::CachingAllocator::AcceleratorAllocatorConfig
 * ::parseArgs (c10/core/AllocatorConfig.cpp: large_segment_size_mb first, then the shared keys)
 * and the CUDA hook CUDAAllocatorConfig::parseArgs (c10/cuda/CUDAAllocatorConfig.cpp: backend,
 * release_lock_on_cudamalloc, pinned_*, graph_capture_record_stream_reuse,
 * per_process_memory_fraction).  A key neither knows is an error in both. */
#include "torch/torchalloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((uint64_t)1 << 20)

void torchalloc_conf_default(torchalloc_conf *c, torchalloc_version v) {
    memset(c, 0, sizeof *c);
    c->version = v;
    c->max_split_size = TORCHALLOC_UNLIMITED;
    c->large_segment_size = TORCHALLOC_KLARGE_BUFFER;
    /* AcceleratorAllocatorConfig(): max_non_split_rounding_size_ = large_segment_size_ (2.11);
     * 2.5: kLargeBuffer. */
    c->max_non_split_rounding = TORCHALLOC_KLARGE_BUFFER;
    c->pinned_num_register_threads = 1;
    c->per_process_memory_fraction = -1.0;
}

/* ---- sizes ---- */

static unsigned log2_floor(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }
static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* AcceleratorAllocatorConfig::roundup_power2_divisions(size): interval of log2(size) from 1 MiB,
 * sizes below 1 MiB use interval 0, sizes past 32 GiB the last. */
static uint64_t divisions_for(const torchalloc_conf *c, uint64_t size) {
    unsigned lg = log2_floor(size);
    unsigned idx = lg > 20 ? lg - 20 : 0;
    if (idx > TORCHALLOC_NDIV - 1)
        idx = TORCHALLOC_NDIV - 1;
    return c->roundup_power2_divisions[idx];
}

/* roundup_power2_next_division(size, divisions) */
static uint64_t next_division(uint64_t size, uint64_t divisions) {
    if (is_pow2(size))
        return size;
    uint64_t floor2 = (uint64_t)1 << log2_floor(size);
    uint64_t step = floor2 >> log2_floor(divisions);
    if (step == 0)
        return floor2 << 1;
    uint64_t r = size & ~(step - 1);
    return r == size ? size : r + step;
}

uint64_t torchalloc_round_size(const torchalloc_conf *c, uint64_t size) {
    if (size < TORCHALLOC_KMIN_BLOCK)
        return TORCHALLOC_KMIN_BLOCK;
    uint64_t d = divisions_for(c, size);
    if (d > 1 && size > TORCHALLOC_KMIN_BLOCK * d)
        return next_division(size, d);
    return TORCHALLOC_KMIN_BLOCK * ((size + TORCHALLOC_KMIN_BLOCK - 1) / TORCHALLOC_KMIN_BLOCK);
}

static uint64_t large_segment(const torchalloc_conf *c) {
    return c->version == TORCHALLOC_V2_5 ? TORCHALLOC_KLARGE_BUFFER : c->large_segment_size;
}

uint64_t torchalloc_allocation_size(const torchalloc_conf *c, uint64_t size) {
    if (size <= TORCHALLOC_KSMALL_SIZE)
        return TORCHALLOC_KSMALL_BUFFER;
    if (size < TORCHALLOC_KMIN_LARGE_ALLOC)
        return large_segment(c);
    return TORCHALLOC_KROUND_LARGE * ((size + TORCHALLOC_KROUND_LARGE - 1) / TORCHALLOC_KROUND_LARGE);
}

uint64_t torchalloc_page_size(const torchalloc_conf *c, int large_pool) {
    return large_pool ? large_segment(c) : TORCHALLOC_KSMALL_BUFFER;
}

/* ---- tokenizer (ConfigTokenizer) ---- */

#define MAX_TOK 512

typedef struct {
    char s[64];
    size_t off;
} tok;

typedef struct {
    const char *text;
    tok t[MAX_TOK];
    size_t n;
    size_t *err_offset;
    char *err;
    size_t errlen;
    torchalloc_version v;
} parser;

static int fail(parser *p, size_t off, const char *fmt, ...) {
    if (p->err_offset)
        *p->err_offset = off;
    if (p->err && p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err, p->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int tokenize(parser *p) {
    const char *s = p->text;
    size_t len = strlen(s), blen = 0, bstart = 0;
    char buf[64];
    p->n = 0;
    for (size_t i = 0; i <= len; i++) {
        char ch = i < len ? s[i] : ',';
        int sep = ch == ',' || ch == ':' || ch == '[' || ch == ']';
        if (sep || i == len) {
            if (blen) {
                if (p->n == MAX_TOK)
                    return fail(p, bstart, "too many tokens in PYTORCH_CUDA_ALLOC_CONF");
                buf[blen] = 0;
                memcpy(p->t[p->n].s, buf, blen + 1);
                p->t[p->n++].off = bstart;
                blen = 0;
            }
            if (i < len) {
                if (p->n == MAX_TOK)
                    return fail(p, i, "too many tokens in PYTORCH_CUDA_ALLOC_CONF");
                p->t[p->n].s[0] = ch;
                p->t[p->n].s[1] = 0;
                p->t[p->n++].off = i;
            }
        } else if (!isspace((unsigned char)ch)) {
            if (blen == 0)
                bstart = i;
            if (blen == sizeof buf - 1)
                return fail(p, bstart, "token too long in PYTORCH_CUDA_ALLOC_CONF");
            buf[blen++] = ch;
        }
    }
    return 0;
}

static int is(const parser *p, size_t i, const char *s) { return i < p->n && strcmp(p->t[i].s, s) == 0; }

/* The value index after "key :" (PyTorch: checkToken(++i, ":"), then ++i). */
static int value_at(parser *p, size_t key, size_t *vi) {
    if (key + 1 >= p->n)
        return fail(p, p->t[key].off, "missing ':' and value after '%s' in PYTORCH_CUDA_ALLOC_CONF",
                    p->t[key].s);
    if (!is(p, key + 1, ":"))
        return fail(p, p->t[key + 1].off, "expected ':' after '%s' in PYTORCH_CUDA_ALLOC_CONF",
                    p->t[key].s);
    if (key + 2 >= p->n)
        return fail(p, p->t[key + 1].off, "missing value for '%s' in PYTORCH_CUDA_ALLOC_CONF",
                    p->t[key].s);
    *vi = key + 2;
    return 0;
}

/* std::stoull: strtoull with a numeric prefix; no digits or overflow throws. */
static int to_size(parser *p, size_t i, const char *key, uint64_t *out) {
    const char *s = p->t[i].s;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return fail(p, p->t[i].off, "invalid value '%s' for %s (std::stoull: no conversion)", s, key);
    if (errno == ERANGE)
        return fail(p, p->t[i].off, "invalid value '%s' for %s (std::stoull: out of range)", s, key);
    *out = v;
    return 0;
}

static int to_double(parser *p, size_t i, const char *key, double *out) {
    const char *s = p->t[i].s;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s)
        return fail(p, p->t[i].off, "invalid value '%s' for %s (std::stod: no conversion)", s, key);
    if (errno == ERANGE)
        return fail(p, p->t[i].off, "invalid value '%s' for %s (std::stod: out of range)", s, key);
    *out = v;
    return 0;
}

/* ConfigTokenizer::toBool */
static int to_bool(parser *p, size_t i, int *out) {
    if (is(p, i, "True"))
        *out = 1;
    else if (is(p, i, "False"))
        *out = 0;
    else
        return fail(p, p->t[i].off, "Expected 'True' or 'False' at index %zu in ConfigTokenizer but got '%s'",
                    i, p->t[i].s);
    return 0;
}

/* max_split_size_mb / max_non_split_rounding_mb: >= large_segment_size in MiB, clamped. */
static int parse_mb_min(parser *p, size_t vi, const char *key, uint64_t min_mb, uint64_t *out) {
    uint64_t v;
    if (to_size(p, vi, key, &v))
        return -1;
    if (v < min_mb)
        return fail(p, p->t[vi].off, "CachingAllocator option %s too small, must be >= %llu", key,
                    (unsigned long long)min_mb);
    if (v > UINT64_MAX / MiB)
        v = UINT64_MAX / MiB;
    *out = v * MiB;
    return 0;
}

/* parseRoundUpPower2Divisions; returns the index of the last token consumed. */
static int parse_divisions(parser *p, size_t vi, torchalloc_conf *c, size_t *last) {
    const char *key = "roundup_power2_divisions";
    uint64_t *d = c->roundup_power2_divisions;
    size_t i = vi;
    if (!is(p, i, "[")) {
        uint64_t v;
        if (to_size(p, i, key, &v))
            return -1;
        if (!is_pow2(v))
            return fail(p, p->t[i].off, "For roundups, the divisions has to be power of 2 ");
        for (int k = 0; k < TORCHALLOC_NDIV; k++)
            d[k] = v;
        *last = i;
        return 0;
    }
    int first = 1;
    size_t last_index = 0;
    while (++i < p->n && !is(p, i, "]")) {
        size_t bi = i;
        if (!is(p, i + 1, ":"))
            return fail(p, i + 1 < p->n ? p->t[i + 1].off : p->t[i].off,
                        "expected ':' after '%s' in roundup_power2_divisions", p->t[bi].s);
        i += 2;
        if (i >= p->n)
            return fail(p, p->t[bi].off, "Expected closing bracket ']' in ConfigTokenizer but reached end of config");
        uint64_t v;
        if (to_size(p, i, key, &v))
            return -1;
        if (v != 0 && !is_pow2(v))
            return fail(p, p->t[i].off, "For roundups, the divisions has to be power of 2 or 0 to disable roundup ");
        if (is(p, bi, ">")) {
            /* 2.11 fills from the interval after the last boundary; 2.5's
             * CUDAAllocatorConfig filled from last_index itself, overwriting that boundary */
            for (size_t k = last_index + (p->v == TORCHALLOC_V2_5 ? 0 : 1); k < TORCHALLOC_NDIV; k++)
                d[k] = v;
        } else {
            uint64_t boundary;
            if (to_size(p, bi, key, &boundary))
                return -1;
            if (!is_pow2(boundary))
                return fail(p, p->t[bi].off, "For roundups, the intervals have to be power of 2 ");
            size_t idx = log2_floor(boundary);
            if (idx > TORCHALLOC_NDIV - 1)
                idx = TORCHALLOC_NDIV - 1;
            if (first) {
                for (size_t k = 0; k < idx; k++)
                    d[k] = v;
                first = 0;
            }
            d[idx] = v;
            last_index = idx;
        }
        if (i + 1 >= p->n)
            return fail(p, p->t[i].off, "Expected closing bracket ']' in ConfigTokenizer but reached end of config");
        if (!is(p, i + 1, "]")) {
            if (!is(p, i + 1, ","))
                return fail(p, p->t[i + 1].off, "expected ',' or ']' in roundup_power2_divisions");
            i++;
        }
    }
    if (i >= p->n)
        return fail(p, p->t[vi].off, "Expected closing bracket ']' in ConfigTokenizer but reached end of config");
    *last = i;
    return 0;
}

static int key_known_25(const char *k) {
    static const char *const gone[] = {"large_segment_size_mb", "pinned_reserve_segment_size_mb",
                                       "graph_capture_record_stream_reuse", "per_process_memory_fraction"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        if (strcmp(k, gone[i]) == 0)
            return 0;
    return 1;
}

/* One key at p->t[k]; *last gets the index of its last token. */
static int parse_key(parser *p, size_t k, torchalloc_conf *c, size_t *last) {
    const char *key = p->t[k].s;
    size_t vi;
    uint64_t v;
    double x;
    if (p->v == TORCHALLOC_V2_5 && !key_known_25(key))
        return fail(p, p->t[k].off, "unknown key '%s' in PYTORCH_CUDA_ALLOC_CONF", key);
    int known = !strcmp(key, "large_segment_size_mb") || !strcmp(key, "max_split_size_mb") ||
                !strcmp(key, "max_non_split_rounding_mb") || !strcmp(key, "garbage_collection_threshold") ||
                !strcmp(key, "roundup_power2_divisions") || !strcmp(key, "expandable_segments") ||
                !strcmp(key, "pinned_use_background_threads") || !strcmp(key, "backend") ||
                !strcmp(key, "release_lock_on_cudamalloc") || !strcmp(key, "release_lock_on_hipmalloc") ||
                !strcmp(key, "pinned_use_cuda_host_register") || !strcmp(key, "pinned_use_hip_host_register") ||
                !strcmp(key, "pinned_num_register_threads") || !strcmp(key, "pinned_reserve_segment_size_mb") ||
                !strcmp(key, "graph_capture_record_stream_reuse") || !strcmp(key, "per_process_memory_fraction");
    if (!known)
        return fail(p, p->t[k].off, "unknown key '%s' in PYTORCH_CUDA_ALLOC_CONF", key);
    if (value_at(p, k, &vi))
        return -1;
    *last = vi;
    if (!strcmp(key, "large_segment_size_mb")) {
        return 0; /* parsed in the first pass */
    } else if (!strcmp(key, "max_split_size_mb")) {
        return parse_mb_min(p, vi, key, large_segment(c) / MiB, &c->max_split_size);
    } else if (!strcmp(key, "max_non_split_rounding_mb")) {
        return parse_mb_min(p, vi, key, large_segment(c) / MiB, &c->max_non_split_rounding);
    } else if (!strcmp(key, "garbage_collection_threshold")) {
        if (to_double(p, vi, key, &x))
            return -1;
        if (!(x > 0 && x < 1.0))
            return fail(p, p->t[vi].off, "garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
        c->garbage_collection_threshold = x;
    } else if (!strcmp(key, "roundup_power2_divisions")) {
        return parse_divisions(p, vi, c, last);
    } else if (!strcmp(key, "expandable_segments")) {
        if (to_bool(p, vi, &c->expandable_segments))
            return -1;
    } else if (!strcmp(key, "pinned_use_background_threads")) {
        return to_bool(p, vi, &c->pinned_use_background_threads);
    } else if (!strcmp(key, "backend")) {
        if (is(p, vi, "cudaMallocAsync"))
            return fail(p, p->t[vi].off, "backend cudaMallocAsync is not modelled (only the native caching allocator)");
        if (!is(p, vi, "native"))
            return fail(p, p->t[vi].off, "Unknown allocator backend, options are native and cudaMallocAsync");
    } else if (!strcmp(key, "release_lock_on_cudamalloc") || !strcmp(key, "release_lock_on_hipmalloc")) {
        return to_bool(p, vi, &c->release_lock_on_cudamalloc);
    } else if (!strcmp(key, "pinned_use_cuda_host_register") || !strcmp(key, "pinned_use_hip_host_register")) {
        return to_bool(p, vi, &c->pinned_use_cuda_host_register);
    } else if (!strcmp(key, "pinned_num_register_threads")) {
        if (to_size(p, vi, key, &v))
            return -1;
        if (!is_pow2(v))
            return fail(p, p->t[vi].off, "Number of register threads has to be power of 2, got %llu",
                        (unsigned long long)v);
        if (v > 128) /* CUDAAllocatorConfig::pinned_max_register_threads() */
            return fail(p, p->t[vi].off, "Number of register threads should be less than or equal to 128, got %llu",
                        (unsigned long long)v);
        c->pinned_num_register_threads = v;
    } else if (!strcmp(key, "pinned_reserve_segment_size_mb")) {
        if (to_size(p, vi, key, &v))
            return -1;
        if (v == 0)
            return fail(p, p->t[vi].off, "Pinned reserve segment size has to be greater than 0");
        c->pinned_reserve_segment_size_mb = v;
    } else if (!strcmp(key, "graph_capture_record_stream_reuse")) {
        return to_bool(p, vi, &c->graph_capture_record_stream_reuse);
    } else if (!strcmp(key, "per_process_memory_fraction")) {
        if (to_double(p, vi, key, &x))
            return -1;
        if (!(x >= 0.0 && x <= 1.0))
            return fail(p, p->t[vi].off, "per_process_memory_fraction is invalid, set it in [0.0, 1.0]");
        c->per_process_memory_fraction = x;
    }
    return 0;
}

int torchalloc_conf_parse_version(const char *text, torchalloc_version v, torchalloc_conf *out,
                                  size_t *err_offset, char *err, size_t errlen) {
    parser p; /* 512 tokens of 72 bytes: 36 KiB of stack */
    torchalloc_conf c;
    torchalloc_conf_default(&c, v);
    if (err && errlen)
        err[0] = 0;
    if (err_offset)
        *err_offset = 0;
    if (!text)
        text = "";
    memset(&p, 0, sizeof p);
    p.text = text;
    p.err_offset = err_offset;
    p.err = err;
    p.errlen = errlen;
    p.v = v;
    if (tokenize(&p))
        return -1;
    /* Pass 1 (2.11): large_segment_size_mb, since the others' limits depend on it. */
    if (v != TORCHALLOC_V2_5) {
        for (size_t i = 0; i < p.n; i++) {
            if (!is(&p, i, "large_segment_size_mb"))
                continue;
            size_t vi;
            uint64_t mb;
            if (value_at(&p, i, &vi) || to_size(&p, vi, "large_segment_size_mb", &mb))
                return -1;
            if (mb <= TORCHALLOC_KMIN_LARGE_ALLOC / MiB)
                return fail(&p, p.t[vi].off, "CachingAllocator option large_segment_size_mb must be > %llu MB",
                            (unsigned long long)(TORCHALLOC_KMIN_LARGE_ALLOC / MiB));
            if (mb > UINT64_MAX / MiB)
                mb = UINT64_MAX / MiB;
            c.large_segment_size = mb * MiB;
            i = vi;
        }
        c.max_non_split_rounding = c.large_segment_size;
    }
    for (size_t i = 0; i < p.n; i++) {
        size_t last = i;
        if (parse_key(&p, i, &c, &last))
            return -1;
        i = last;
        if (i + 1 < p.n) {
            if (!is(&p, i + 1, ","))
                return fail(&p, p.t[i + 1].off, "expected ',' after the value of '%s' in PYTORCH_CUDA_ALLOC_CONF",
                            p.t[i].s);
            i++;
        }
    }
    *out = c;
    return 0;
}

int torchalloc_conf_parse(const char *text, torchalloc_conf *out, size_t *err_offset, char *err,
                          size_t errlen) {
    return torchalloc_conf_parse_version(text, TORCHALLOC_V2_11, out, err_offset, err, errlen);
}
