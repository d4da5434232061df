/* SPDX-License-Identifier: MIT */
/* fuzz_cli.c — libFuzzer harness over memlife's command line: options and their values, parsed
 * but never run. Built by tests/fuzz.sh like fuzz_load.c.
 *
 * The input is split into argv words at '\n' and '\0' (at most 64 words, the first is the
 * command name). The words go through the parse entry points a command calls before it does
 * anything: ml_args_parse (cli/args.h) with the common options plus a table of every option kind
 * (the run command's own options, so --ranks, --timeout, --allocator, --no-lint and --inject
 * have their real bounds), then what run does with the values: rt_inject_parse for each
 * --inject, ml_place_ranks for --ranks/--gpus/--world (no MPI launcher in the environment: it
 * only decides), ml_output_check of -o against the files, ml_parse_byte_count of each word.
 *
 * Contracts besides crashes and undefined behaviour: ml_args_parse returns 0 or ML_EXIT_INPUT;
 * after 0, every file and list value is one of the argv words (or what follows '=' in one),
 * --world and --ranks lie in their bounds, --timeout is > 0, the format is one of the four; a
 * failed inject parse says why; an accepted byte count is in [1, 2^63-1]. */
#include "cli/args.h"
#include "cli/cmd.h"
#include "cli/place.h"
#include "ir/sched.h"
#include "base/input.h"
#include "exec/inject.h"
#include "exec/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FUZZ_MAX_WORDS = 64 };

static void fail(const char *what, const char *word) {
    fprintf(stderr, "fuzz_cli: contract broken: %s: '%s'\n", what, word ? word : "");
    abort();
}

/* True when v is argv word k itself or the part after its first '='. */
static bool from_argv(const char *v, char **argv, int argc) {
    for (int k = 0; k < argc; k++) {
        const char *eq = strchr(argv[k], '=');
        if (v == argv[k] || (eq && v == eq + 1))
            return true;
    }
    return false;
}

static const char *const allocators[] = {"cuda", "async", "chunked", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[FUZZ_MAX_WORDS + 1];
    int argc = 0;
    char *p = text, *end = text + size;
    while (p <= end && argc < FUZZ_MAX_WORDS) {
        char *q = p;
        while (q < end && *q != '\n' && *q != '\0')
            q++;
        *q = '\0';
        argv[argc++] = p;
        p = q + 1;
    }
    argv[argc] = NULL;

    const char *backend = "host";
    int ranks = 0, gpus = 0, allocator = 0;
    double timeout = 60.0;
    bool no_data = false;
    ml_vec no_lint, inject;
    ml_vec_init(&no_lint, sizeof(const char *));
    ml_vec_init(&inject, sizeof(const char *));
    const ml_opt extra[] = {
        {"--backend", "-b", OPT_STRING, &backend, 0, 0, NULL},
        {"--ranks", "-n", OPT_INT, &ranks, 1, 4096, NULL},
        {"--gpus", NULL, OPT_INT, &gpus, 1, 1024, NULL},
        {"--allocator", NULL, OPT_CHOICE, &allocator, 0, 0, allocators},
        {"--timeout", NULL, OPT_DOUBLE, &timeout, 1, 0, NULL},
        {"--no-lint", NULL, OPT_LIST, &no_lint, 0, 0, NULL},
        {"--no-data", NULL, OPT_FLAG, &no_data, 0, 0, NULL},
        {"--inject", NULL, OPT_LIST, &inject, 0, 0, NULL},
    };
    ml_args a;
    int rc = ml_args_parse(&a, "run", argc, argv, extra, ML_ARRAY_LEN(extra), (size & 1) != 0);
    if (rc != 0 && rc != ML_EXIT_INPUT)
        fail("ml_args_parse returned neither 0 nor 2", argv[0]);
    if (rc == 0 && !a.help) {
        for (size_t k = 0; k < a.files.n; k++)
            if (!from_argv(ML_VEC_AT(&a.files, const char *, k), argv, argc))
                fail("a file word that is not an argv word", ML_VEC_AT(&a.files, const char *, k));
        for (size_t k = 0; k < a.set.n; k++)
            if (!strchr(ML_VEC_AT(&a.set, const char *, k), '='))
                fail("--set accepted without '='", ML_VEC_AT(&a.set, const char *, k));
        if (a.world < 0 || a.world > SCHED_WORLD_MAX || ranks < 0 || ranks > 4096 || gpus < 0 ||
            gpus > 1024)
            fail("a count outside its bounds", argv[0]);
        if (!(timeout > 0))
            fail("--timeout accepted at or below 0", argv[0]);
        if ((unsigned)a.format > FMT_MD || allocator < 0 || allocator > 2)
            fail("a choice outside its table", argv[0]);
        if (a.output && !*a.output)
            fail("-o accepted empty", argv[0]);
        for (size_t k = 0; k < inject.n; k++) {
            const char *spec = ML_VEC_AT(&inject, const char *, k);
            if (!from_argv(spec, argv, argc))
                fail("an --inject value that is not an argv word", spec);
            rt_options o;
            rt_options_default(&o);
            char err[300] = "";
            if (rt_inject_parse(spec, &o, err, sizeof err) != 0 && !err[0])
                fail("rt_inject_parse failed without saying why", spec);
        }
        ml_place pl;
        int prc = ml_place_ranks("run", gpus, ranks, a.world, &pl);
        if (prc == 0 && (pl.world < 0 || pl.n_local < 1))
            fail("ml_place_ranks placed no rank", argv[0]);
        char err[700];
        ml_output_check(a.output, (const char *const *)a.files.items, a.files.n, err, sizeof err);
    }
    for (int k = 0; k < argc; k++) {
        uint64_t v;
        if (ml_parse_byte_count(argv[k], &v) == 0 && (v == 0 || v > (uint64_t)INT64_MAX))
            fail("a byte count outside [1, 2^63-1] accepted", argv[k]);
    }
    ml_args_free(&a);   /* after an error too: the parse may have pushed words */
    ml_vec_free(&no_lint);
    ml_vec_free(&inject);
    free(text);
    return 0;
}
