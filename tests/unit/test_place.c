/* SPDX-License-Identifier: MIT */
/* test_place.c — where the ranks of run, bench and equiv come from (cli/place.c): --gpus, an MPI
 * launcher's environment (faked here with Open MPI's OMPI_COMM_WORLD_SIZE / _RANK and PMIx's
 * PMIX_RANK), memlife's own mpirun, and every refusal with its exact first line and exit code. */
#include "testutil.h"
#include "cli/place.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void clear_env(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                        "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_NTASKS",
                                        "MEMLIFE_LAUNCHED"};
    for (size_t k = 0; k < ML_ARRAY_LEN(names); k++)
        unsetenv(names[k]);
}

/* ml_place_ranks with stderr captured: its return value, and the first line it printed into
 * line ("" when none). */
static int placed(int gpus, int ranks, int world, ml_place *out, char *line, size_t len) {
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    dup2(fileno(tmp), STDERR_FILENO);
    int rc = ml_place_ranks("run", gpus, ranks, world, out);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    line[0] = '\0';
    if (fgets(line, (int)len, tmp))
        line[strcspn(line, "\n")] = '\0';
    fclose(tmp);
    return rc;
}

static void test_gpus(void **state) {
    (void)state;
    clear_env();
    ml_place p;
    char line[256];
    assert_int_equal(placed(2, 0, 0, &p, line, sizeof line), 0);
    assert_int_equal(p.world, 2);
    assert_int_equal(p.n_local, 2);
    assert_int_equal(p.rank, 0);
    assert_false(p.mpi);
    assert_false(p.launch);
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
    assert_int_equal(p.world, 4);
    assert_int_equal(p.rank, 3);
    assert_int_equal(p.n_local, 1);
    assert_true(p.mpi);
    assert_false(p.launch);
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
    assert_int_equal(placed(0, 4, 2, &p, line, sizeof line), 0);   /* --ranks wins */
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpus),
        cmocka_unit_test(test_under_a_launcher),
        cmocka_unit_test(test_own_mpirun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
