/* SPDX-License-Identifier: MIT */
/* test_place.c — where the ranks of run, bench and equiv come from (cli/place.c): --gpus, an MPI
 * launcher's environment (faked here with Open MPI's OMPI_COMM_WORLD_SIZE / _RANK and PMIx's
 * PMIX_RANK), memlife's own mpirun, and every refusal with its exact first line and exit code. */
#include "testutil.h"
#include "cli/place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void clear_env(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                        "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_NTASKS",
                                        "MEMLIFE_LAUNCHED"};
    for (size_t k = 0; k < ML_ARRAY_LEN(names); k++)
        unsetenv(names[k]);
}

/* stderr into a temp file until captured_line (*saved: the real stderr). */
static FILE *capture_stderr(int *saved) {
    fflush(stderr);
    *saved = dup(STDERR_FILENO);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    dup2(fileno(tmp), STDERR_FILENO);
    return tmp;
}

/* stderr back; the first line written meanwhile into line ("" when none). */
static void captured_line(FILE *tmp, int saved, char *line, size_t len) {
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    line[0] = '\0';
    if (fgets(line, (int)len, tmp))
        line[strcspn(line, "\n")] = '\0';
    fclose(tmp);
}

/* ml_place_ranks with stderr captured: its return value, and the first line it printed into
 * line ("" when none). */
static int placed(int gpus, int ranks, int world, ml_place *out, char *line, size_t len) {
    int saved;
    FILE *tmp = capture_stderr(&saved);
    int rc = ml_place_ranks("run", gpus, ranks, world, out);
    captured_line(tmp, saved, line, len);
    return rc;
}

/* Every field of a placement (place.h), checked in one call by the cases that fix them all. */
static void expect_place(const ml_place *p, int world, int rank, int n_local, bool mpi,
                         bool launch) {
    assert_int_equal(p->world, world);
    assert_int_equal(p->rank, rank);
    assert_int_equal(p->n_local, n_local);
    assert_int_equal(p->mpi, mpi);
    assert_int_equal(p->launch, launch);
}

static void test_gpus(void **state) {
    (void)state;
    clear_env();
    ml_place p;
    char line[256];
    assert_int_equal(placed(2, 0, 0, &p, line, sizeof line), 0);
    expect_place(&p, 2, 0, 2, false, false);   /* one process drives both ranks */
    assert_int_equal(placed(2, 2, 2, &p, line, sizeof line), 0);    /* agreeing is fine */
    assert_int_equal(placed(2, 4, 0, &p, line, sizeof line), 2);
    assert_string_equal(line, "error: --ranks 4 and --gpus 2 disagree");
    assert_int_equal(placed(2, 0, 4, &p, line, sizeof line), 2);
    assert_string_equal(line, "error: --world 4 and --gpus 2 disagree");
}

static void test_under_a_launcher(void **state) {
    (void)state;
    clear_env();
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    ml_place p;
    char line[256];
    assert_int_equal(placed(0, 0, 0, &p, line, sizeof line), 0);
    expect_place(&p, 4, 3, 1, true, false);    /* the launcher's size and rank */
    assert_string_equal(line, "");
    assert_int_equal(placed(0, 2, 0, &p, line, sizeof line), 2);
    assert_string_equal(line, "error: --ranks 2, but the MPI launcher started 4 ranks");
    assert_int_equal(placed(0, 0, 8, &p, line, sizeof line), 2);
    assert_string_equal(line, "error: --world 8, but the MPI launcher started 4 ranks");
    /* PMIx without SLURM_NTASKS: a rank but no size. */
    clear_env();
    setenv("PMIX_RANK", "1", 1);
    assert_int_equal(placed(0, 0, 0, &p, line, sizeof line), 3);
    assert_string_equal(line, "error: the MPI launcher does not say how many ranks it started");
    clear_env();
}

static void test_own_mpirun(void **state) {
    (void)state;
    clear_env();
    ml_place p;
    char line[256];
    /* --ranks and --world that disagree: said once, here, before mpirun starts ranks that
     * would each find the launcher's size against --world */
    assert_int_equal(placed(0, 4, 2, &p, line, sizeof line), 2);
    assert_string_equal(line, "error: --ranks 4 and --world 2 disagree (one process per rank)");
    assert_int_equal(placed(0, 4, 4, &p, line, sizeof line), 0);
    assert_true(p.launch);
    assert_true(p.mpi);
    assert_int_equal(p.world, 4);
    assert_int_equal(placed(0, 0, 2, &p, line, sizeof line), 0);
    assert_int_equal(p.world, 2);
    assert_int_equal(placed(0, 0, 0, &p, line, sizeof line), 0);
    assert_true(p.launch);
    assert_int_equal(p.world, 0);                                  /* the files will say */
    /* A child of memlife's mpirun that sees no launcher must not start another one. */
    setenv("MEMLIFE_LAUNCHED", "1", 1);
    assert_int_equal(placed(0, 0, 0, &p, line, sizeof line), 3);
    assert_string_equal(line, "error: started by memlife's mpirun but no MPI environment is "
                              "visible");
    clear_env();
}

/* ml_place_job: the placement of a's --gpus / --ranks / --world, written into the job (run,
 * bench and equiv run through it), nothing written on a refusal. */
static void test_into_fields(void **state) {
    (void)state;
    clear_env();
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    ml_args a;
    memset(&a, 0, sizeof a);
    bool launch = true;
    rt_job j;
    memset(&j, 0, sizeof j);
    assert_int_equal(ml_place_job("bench", &a, &j, &launch), 0);
    assert_true(j.mpi);
    assert_false(launch);
    assert_int_equal(j.world, 4);
    assert_int_equal(j.rank, 3);
    assert_int_equal(j.n_local, 1);
    a.world = 8;   /* against the launcher's 4 ranks: refused, the fields left alone */
    j.world = j.rank = j.n_local = -1;
    int saved;
    char line[256];
    FILE *tmp = capture_stderr(&saved);
    int rc = ml_place_job("bench", &a, &j, &launch);
    captured_line(tmp, saved, line, sizeof line);
    assert_int_equal(rc, 2);
    assert_string_equal(line, "error: --world 8, but the MPI launcher started 4 ranks");
    assert_int_equal(j.world, -1);
    assert_int_equal(j.rank, -1);
    assert_int_equal(j.n_local, -1);
    clear_env();
    a.world = 0;
    a.backend.ranks = 2;   /* no launcher: memlife's own mpirun at --ranks */
    assert_int_equal(ml_place_job("bench", &a, &j, &launch), 0);
    assert_true(launch);
    assert_true(j.mpi);
    assert_int_equal(j.world, 2);
    assert_int_equal(j.rank, 0);
    assert_int_equal(j.n_local, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpus),
        cmocka_unit_test(test_under_a_launcher),
        cmocka_unit_test(test_own_mpirun),
        cmocka_unit_test(test_into_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
