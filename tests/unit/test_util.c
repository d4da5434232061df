/* SPDX-License-Identifier: MIT */
/* test_util.c — diagnostics format, atomic writes, byte formatting, arena and vectors. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ir/coll.h"
#include "base/util.h"

static void test_diag_format(void **state) {
    ml_diags d;
    ml_diags_init(&d);
    ml_error(&d, "s.yaml", ((ml_mark){3, 14}), "unknown step '%s'", "alreduce");
    ml_diag_add(&d, ML_DIAG_ERROR, "s.yaml", (ml_mark){7, 3}, 2, "size_mismatch",
                "send has %d elements", 5);
    ml_diag_add(&d, ML_DIAG_WARNING, "s.yaml", (ml_mark){1, 1}, -1, NULL, "unused let 'q'");
    ml_error(&d, NULL, ((ml_mark){0, 0}), "no world size");
    assert_int_equal(d.errors, 3);
    assert_int_equal(d.warnings, 1);
    char buf[256];
    ml_diag_format(&ML_VEC_AT(&d.items, ml_diag, 0), buf, sizeof buf);
    assert_string_equal(buf, "s.yaml:3:14: error: unknown step 'alreduce'");
    ml_diag_format(&ML_VEC_AT(&d.items, ml_diag, 1), buf, sizeof buf);
    assert_string_equal(buf, "s.yaml:7:3: error: send has 5 elements [rank 2]");
    ml_diag_format(&ML_VEC_AT(&d.items, ml_diag, 2), buf, sizeof buf);
    assert_string_equal(buf, "s.yaml:1:1: warning: unused let 'q'");
    ml_diag_format(&ML_VEC_AT(&d.items, ml_diag, 3), buf, sizeof buf);
    assert_string_equal(buf, "error: no world size");
    assert_string_equal(ML_VEC_AT(&d.items, ml_diag, 1).code, "size_mismatch");
    assert_ptr_equal(ml_diags_first_error(&d), &ML_VEC_AT(&d.items, ml_diag, 0));

    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    ml_diags_print(&d, f);
    fclose(f);
    assert_string_equal(out, "s.yaml:3:14: error: unknown step 'alreduce'\n"
                             "s.yaml:7:3: error: send has 5 elements [rank 2]\n"
                             "s.yaml:1:1: warning: unused let 'q'\n"
                             "error: no world size\n");
    free(out);
    ml_diags_free(&d);
}

static void test_diag_max_errors(void **state) {
    ml_diags d;
    ml_diags_init(&d);
    d.max_errors = 2;
    for (int k = 0; k < 5; k++) {
        ml_error(&d, "f", ((ml_mark){1, 1}), "e%d", k);
        /* each error's note goes with it: kept after a kept error, left out after another */
        ml_diag_add(&d, ML_DIAG_NOTE, "f", ((ml_mark){1, 2}), -1, NULL, "n%d", k);
    }
    assert_int_equal(d.errors, 5);   /* counted */
    assert_int_equal(d.items.n, 4);  /* kept: e0 n0 e1 n1 */
    char line[64];
    ml_diag_format(&ML_VEC_AT(&d.items, ml_diag, 3), line, sizeof line);
    assert_string_equal(line, "f:1:2: note: n1");
    ml_diags_free(&d);
}

static int count_entries(const char *dir) {
    DIR *dp = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        if (e->d_name[0] != '.')
            n++;
    closedir(dp);
    return n;
}

static void test_atomic_write(void **state) {
    char dir[] = "/tmp/memlife-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/out.json", dir);
    assert_int_equal(ml_write_file_atomic(path, "hello\n", 6), 0);
    assert_int_equal(ml_write_file_atomic(path, "replaced", 8), 0);
    FILE *f = fopen(path, "r");
    char buf[32] = "";
    assert_int_equal(fread(buf, 1, sizeof buf, f), 8);
    fclose(f);
    assert_string_equal(buf, "replaced");
    /* The temp file is gone: only out.json is in the folder. */
    assert_int_equal(count_entries(dir), 1);
    /* A folder that does not exist: an error, and nothing written anywhere. */
    char bad[160];
    snprintf(bad, sizeof bad, "%s/missing/out.json", dir);
    assert_int_equal(ml_write_file_atomic(bad, "x", 1), -1);
    assert_int_equal(count_entries(dir), 1);
    /* A device is written in place, never replaced by a plain file. */
    assert_int_equal(ml_write_file_atomic("/dev/null", "x", 1), 0);
    struct stat st;
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    unlink(path);
    rmdir(dir);
}

static void read_all(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* -o through links and descriptors (ml_output_place): a link stays a link and the file it ends
 * at is replaced; a link to a file not made yet creates that file; a descriptor by name is
 * written as it stands (appending where it was opened to append); a loop of links is ELOOP. */
static void test_output_place(void **state) {
    (void)state;
    char dir[] = "/tmp/memlife-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char real[160], link[160], chain[160], dang[160], loop[160], buf[64], target[4096];
    snprintf(real, sizeof real, "%s/real.json", dir);
    snprintf(link, sizeof link, "%s/link.json", dir);
    snprintf(chain, sizeof chain, "%s/chain.json", dir);
    snprintf(dang, sizeof dang, "%s/dang.json", dir);
    snprintf(loop, sizeof loop, "%s/loop.json", dir);
    assert_int_equal(ml_write_file_atomic(real, "old", 3), 0);
    assert_int_equal(symlink("real.json", link), 0);    /* relative: beside the link */
    assert_int_equal(symlink(link, chain), 0);          /* absolute, to a link */
    int fd;
    assert_int_equal(ml_output_place(chain, &fd, target, sizeof target), ML_OUT_REPLACE);
    assert_string_equal(target, real);
    assert_int_equal(ml_write_file_atomic(chain, "new", 3), 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(chain, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    read_all(real, buf, sizeof buf);
    assert_string_equal(buf, "new");
    /* A link to a name not made yet: that name is created (new.json), the link kept. */
    assert_int_equal(symlink("new.json", dang), 0);
    assert_int_equal(ml_write_file_atomic(dang, "made", 4), 0);
    char made[160];
    snprintf(made, sizeof made, "%s/new.json", dir);
    read_all(made, buf, sizeof buf);
    assert_string_equal(buf, "made");
    assert_int_equal(lstat(dang, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    /* real, link, chain, dang, new.json: no temp file left behind */
    assert_int_equal(count_entries(dir), 5);
    /* Descriptors by name: written as they stand; nothing is created. */
    assert_int_equal(ml_output_place("/dev/stdout", &fd, target, sizeof target), ML_OUT_FD);
    assert_int_equal(fd, 1);
    assert_int_equal(ml_output_place("/dev/stderr", &fd, target, sizeof target), ML_OUT_FD);
    assert_int_equal(fd, 2);
    assert_int_equal(ml_output_place("/proc/self/fd/12", &fd, target, sizeof target), ML_OUT_FD);
    assert_int_equal(fd, 12);
    assert_int_equal(ml_output_place("/dev/fd/1x", &fd, target, sizeof target), ML_OUT_REPLACE);
    char app[160];
    snprintf(app, sizeof app, "%s/app.txt", dir);
    int afd = open(app, O_WRONLY | O_CREAT | O_APPEND, 0644);
    assert_true(afd >= 0);
    assert_int_equal(write(afd, "first\n", 6), 6);
    char byname[32];
    snprintf(byname, sizeof byname, "/dev/fd/%d", afd);
    assert_int_equal(ml_write_file_atomic(byname, "second\n", 7), 0);
    close(afd);
    read_all(app, buf, sizeof buf);
    assert_string_equal(buf, "first\nsecond\n");
    /* A loop of links: an error, nothing written. */
    assert_int_equal(symlink("loop.json", loop), 0);
    assert_int_equal(ml_write_file_atomic(loop, "x", 1), -1);
    assert_int_equal(errno, ELOOP);
    assert_int_equal(count_entries(dir), 7);
    const char *names[] = {"real.json", "link.json", "chain.json", "dang.json", "new.json",
                           "app.txt", "loop.json"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char p[200];
        snprintf(p, sizeof p, "%s/%s", dir, names[k]);
        assert_int_equal(unlink(p), 0);
    }
    assert_int_equal(rmdir(dir), 0);
}

static void test_format_bytes(void **state) {
    char buf[64];
    ml_format_bytes((uint64_t)256 << 20, buf, sizeof buf);
    assert_string_equal(buf, "256 MiB");
    ml_format_bytes((uint64_t)576 << 20, buf, sizeof buf);   /* seed: naive RS+AG peak */
    assert_string_equal(buf, "576 MiB");
    ml_format_bytes(64 << 10, buf, sizeof buf);
    assert_string_equal(buf, "64 KiB");
    ml_format_bytes((1 << 20) + 1, buf, sizeof buf);
    assert_string_equal(buf, "1048577 B");
    ml_format_bytes(0, buf, sizeof buf);
    assert_string_equal(buf, "0 B");

    ml_format_mib((int64_t)320 << 20, buf, sizeof buf);      /* seed: RS-only peak */
    assert_string_equal(buf, "320");
    ml_format_mib(1 << 19, buf, sizeof buf);
    assert_string_equal(buf, "0.5");
    ml_format_mib(1049, buf, sizeof buf);                    /* 0.0010004 MiB */
    assert_string_equal(buf, "0.001");
    ml_format_mib((1 << 20) + (1 << 18), buf, sizeof buf);
    assert_string_equal(buf, "1.25");
    ml_format_mib(-((int64_t)64 << 20), buf, sizeof buf);
    assert_string_equal(buf, "-64");
    ml_format_mib(-1, buf, sizeof buf);                      /* rounds to zero: no "-0" */
    assert_string_equal(buf, "0");
}

static void test_arena_and_vec(void **state) {
    ml_arena *a = ml_arena_new();
    char *prev = NULL;
    for (int k = 0; k < 100000; k++) {
        char *p = ml_arena_alloc(a, (size_t)(k % 37) + 1);
        assert_int_equal((uintptr_t)p % 16, 0);
        assert_int_equal(p[0], 0);
        p[0] = 1;
        assert_ptr_not_equal(p, prev);
        prev = p;
    }
    char *s = ml_arena_strndup(a, "float32xx", 7);
    assert_string_equal(s, "float32");
    assert_true(ml_arena_bytes(a) >= 100000 * 16);
    void *big = ml_arena_alloc(a, (size_t)10 << 20);
    assert_non_null(big);
    ml_arena_free(a);

    ml_vec v;
    ml_vec_init(&v, sizeof(int64_t));
    for (int64_t k = 0; k < 1000; k++)
        *(int64_t *)ml_vec_push(&v) = k * k;
    assert_int_equal(v.n, 1000);
    assert_int_equal(ML_VEC_AT(&v, int64_t, 999), 999 * 999);
    ml_vec_free(&v);

    ml_str o = {0};
    ml_str_printf(&o, "%s=%d", "world", 4);
    for (int k = 0; k < 100; k++)
        ml_str_printf(&o, "%0300d", k);
    ml_str_append(&o, "!", 1);
    assert_int_equal(o.n, 7 + 100 * 300 + 1);
    assert_memory_equal(o.s, "world=4", 7);
    assert_int_equal(o.s[o.n], '\0');
    ml_str_free(&o);
}

static void test_tables(void **state) {
    /* nccl.h: ncclFloat16 6, ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9 */
    assert_int_equal(ml_dtypes[DT_BFLOAT16].nccl, 9);
    assert_int_equal(ml_dtypes[DT_FLOAT32].nccl, 7);
    assert_int_equal(ml_dtypes[DT_UINT64].nccl, 5);
    assert_int_equal(ml_dtype_lookup("float16", 7), DT_FLOAT16);
    assert_int_equal(ml_dtype_lookup("float1", 6), -1);
    assert_int_equal(ml_redops[RED_MIN].nccl, 3);
    assert_int_equal(ml_redop_lookup("max", 3), RED_MAX);
    assert_int_equal(ml_coll_lookup("reduce", 6), COLL_REDUCE);
    assert_int_equal(ml_coll_lookup("reduce_scatter", 14), COLL_REDUCE_SCATTER);
    /* docs/design.md: ring steps AR 2(N-1), RS/AG N-1; busbw AR 2(N-1)/N, RS/AG (N-1)/N */
    assert_int_equal(ml_colls[COLL_ALL_REDUCE].ring_steps(4), 6);
    assert_int_equal(ml_colls[COLL_ALL_GATHER].ring_steps(4), 3);
    assert_true(ml_colls[COLL_ALL_REDUCE].busbw_factor(4) == 1.5);
    assert_true(ml_colls[COLL_REDUCE_SCATTER].busbw_factor(4) == 0.75);
    assert_true(ml_colls[COLL_BROADCAST].busbw_factor(4) == 1.0);
    assert_true(ml_colls[COLL_ALL_REDUCE].link_bytes(256.0, 4) == 384.0);
    /* In place: RS recv == send + rank*recvcount; AG send == recv + rank*sendcount */
    int64_t delta = 1;
    assert_true(ml_coll_inplace_at(COLL_REDUCE_SCATTER, 16, 3, &delta));
    assert_int_equal(delta, 48);
    assert_true(ml_coll_inplace_at(COLL_ALL_GATHER, 16, 3, &delta));
    assert_int_equal(delta, -48);
    assert_true(ml_coll_inplace_at(COLL_BROADCAST, 16, 3, &delta));
    assert_int_equal(delta, 0);
    assert_int_equal(ml_coll_count_of(COLL_REDUCE_SCATTER, 64, 16), 16);
    assert_int_equal(ml_coll_count_of(COLL_ALL_GATHER, 16, 64), 16);
    /* all_to_all: count/world to each rank, both sides count, never in place; (N-1)/N of the
     * message over N-1 steps (nccl-tests' alltoall factor); one SendRecv kernel */
    assert_int_equal(ml_coll_lookup("all_to_all", 10), COLL_ALL_TO_ALL);
    assert_int_equal(ml_coll_send_count(COLL_ALL_TO_ALL, 16, 4), 16);
    assert_int_equal(ml_coll_recv_count(COLL_ALL_TO_ALL, 16, 4), 16);
    assert_true(ml_colls[COLL_ALL_TO_ALL].count_per_rank);
    assert_false(ml_coll_inplace_at(COLL_ALL_TO_ALL, 16, 0, &delta));
    assert_int_equal(ml_colls[COLL_ALL_TO_ALL].ring_steps(4), 3);
    assert_true(ml_colls[COLL_ALL_TO_ALL].busbw_factor(4) == 0.75);
    assert_true(ml_colls[COLL_ALL_TO_ALL].link_bytes(256.0, 4) == 192.0);
    assert_int_equal(ml_colls[COLL_ALL_TO_ALL].flow.source, FLOW_TRANSPOSE);
    assert_int_equal(ml_coll_kernel_family(COLL_ALL_TO_ALL), COLL_SEND);
    assert_int_equal(ml_coll_send_count(COLL_REDUCE_SCATTER, 16, 4), 64);
    assert_int_equal(ml_coll_recv_count(COLL_ALL_GATHER, 16, 4), 64);
    assert_int_equal(ml_coll_recv_count(COLL_REDUCE_SCATTER, 16, 4), 16);
}

/* Every collective declares its data flow (coll.h), consistent with the rest of its row: a
 * reduction exactly where the row has an op, a shard of the rank exactly where the send is world
 * times the recv (reduce_scatter), a root-based flow only where the row has a root. */
static void test_coll_flow(void **state) {
    for (int c = 0; c < COLL_COUNT; c++) {
        const ml_coll_info *ci = &ml_colls[c];
        assert_int_not_equal(ci->flow.source, FLOW_UNDECLARED);
        assert_int_equal(ci->flow.source == FLOW_REDUCTION, ci->has_op);
        assert_int_equal(ci->flow.shard_of_rank,
                         ci->send_n == CNT_WORLD_X_COUNT && ci->recv_n == CNT_COUNT);
        if (ci->flow.source == FLOW_ROOT_SEND || ci->flow.root_only)
            assert_true(ci->has_root);
    }
    assert_int_equal(ml_colls[COLL_ALL_GATHER].flow.source, FLOW_GATHER);
    assert_true(ml_colls[COLL_REDUCE].flow.root_only);
    assert_int_equal(ml_colls[COLL_BROADCAST].flow.source, FLOW_ROOT_SEND);
}

/* Every row of the collective table declares every field whose zero value would be a silent
 * default (coll.h): counts, the in-place rule, the bus-bandwidth reference, the data flow, the
 * three formulas and the names; names are unique and found by lookup. A row added without one
 * fails here. */
static void test_coll_rows_complete(void **state) {
    for (int c = 0; c < COLL_COUNT; c++) {
        const ml_coll_info *ci = &ml_colls[c];
        assert_non_null(ci->name);
        assert_int_equal(ml_coll_lookup(ci->name, strlen(ci->name)), c);
        assert_true(ci->nccl_api && ci->nccl_api[0]);
        assert_true(ci->kernel_match && ci->kernel_match[0]);
        assert_int_not_equal(ci->send_n, CNT_UNDECLARED);
        assert_int_not_equal(ci->recv_n, CNT_UNDECLARED);
        assert_int_not_equal(ci->inplace, INPLACE_UNDECLARED);
        assert_true(ci->busbw_ref > BUSBW_UNDECLARED && ci->busbw_ref < BUSBW_COUNT);
        assert_int_not_equal(ci->flow.source, FLOW_UNDECLARED);
        assert_non_null(ci->ring_steps);
        assert_non_null(ci->busbw_factor);
        assert_non_null(ci->link_bytes);
        /* count/world to each rank: both sides hold count */
        if (ci->count_per_rank)
            assert_true(ci->send_n == CNT_COUNT && ci->recv_n == CNT_COUNT);
        /* send/recv name one view (`buf:`): in place by construction */
        if (ci->p2p)
            assert_int_equal(ci->inplace, INPLACE_SAME);
        for (int k = 0; k < c; k++)
            assert_string_not_equal(ml_colls[k].name, ci->name);
        assert_true(ml_coll_kernel_family((ml_coll)c) <= (ml_coll)c);
    }
    /* send and recv launch one SendRecv kernel: one family */
    assert_int_equal(ml_coll_kernel_family(COLL_RECV), COLL_SEND);
    assert_int_equal(ml_coll_kernel_family(COLL_REDUCE), COLL_REDUCE);
}

/* The one allocation-failure path: a request that cannot be met prints the bytes asked for and
 * exits 3, in a child process (SIZE_MAX / 2 * 2 overflows nothing but no allocator grants it). */
static void test_out_of_memory(void **state) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        (void)ml_xmalloc(SIZE_MAX / 2);
        _exit(0);
    }
    close(fds[1]);
    char buf[400] = "";
    ssize_t n = 0, got;
    /* to the end: the child may write more than once (a sanitizer's warning, then memlife's
     * line), and a pipe closed early would kill it with SIGPIPE */
    while ((got = read(fds[0], buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += got;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 3);
    assert_true(n > 0);
    char want[100];
    snprintf(want, sizeof want, "memlife: error: out of memory (%zu bytes)\n", (size_t)SIZE_MAX / 2);
    /* memlife's line is the last one: a sanitizer's allocator may warn before it (ASan: "failed
     * to allocate 0x7fff... bytes") */
    size_t nb = strlen(buf), nw = strlen(want);
    assert_true(nb >= nw);
    assert_string_equal(buf + nb - nw, want);
    assert_true(nb == nw || buf[nb - nw - 1] == '\n');
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diag_format),  cmocka_unit_test(test_diag_max_errors),
        cmocka_unit_test(test_atomic_write), cmocka_unit_test(test_output_place), cmocka_unit_test(test_format_bytes),
        cmocka_unit_test(test_arena_and_vec), cmocka_unit_test(test_tables),
        cmocka_unit_test(test_coll_flow),    cmocka_unit_test(test_coll_rows_complete),    cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
