/* SPDX-License-Identifier: MIT */
/* visual.c — input loading and output for the visual commands (visual.h). */
#include "visual.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ml_visual_load(const ml_args *a, ml_vec *out) {
    sched_params p = ml_args_params(a);
    ml_diags d;
    ml_diags_init(&d);
    ml_vec_init(out, sizeof(series));
    int rc = ML_EXIT_OK;
    for (size_t k = 0; k < a->files.n; k++) {
        const char *word = ML_VEC_AT(&a->files, const char *, k);
        char with_plan[4096];
        size_t len = strlen(word);
        bool yaml = (len > 5 && !strcmp(word + len - 5, ".yaml")) ||
                    (len > 4 && !strcmp(word + len - 4, ".yml"));
        if (a->plan && yaml) {
            snprintf(with_plan, sizeof with_plan, "%s:%s", word, a->plan);
            word = with_plan;
        }
        if (series_load(word, &p, out, &d) < 0)
            rc = ML_EXIT_INPUT;
    }
    ml_diags_print(&d, stderr);
    ml_diags_free(&d);
    return rc;
}

int ml_visual_emit(const char *path, const ml_str *text) {
    if (!path || !strcmp(path, "-")) {
        if (text->n && fwrite(text->s, 1, text->n, stdout) != text->n)
            return ML_EXIT_RUNTIME;
        return ML_EXIT_OK;
    }
    if (ml_write_file_atomic(path, text->s ? text->s : "", text->n) != 0) {
        ml_report(ML_DIAG_ERROR, NULL, "cannot write '%s': %s", path, strerror(errno));
        return ML_EXIT_RUNTIME;
    }
    return ML_EXIT_OK;
}

int ml_visual_run(const ml_args *a, ml_visual_render render, const void *ctx) {
    ml_vec items;
    int rc = ml_visual_load(a, &items);
    if (rc == ML_EXIT_OK) {
        ml_str text = {0};
        ml_diags d;
        ml_diags_init(&d);
        if (render(items.items, items.n, ctx, &text, &d) < 0) {
            ml_diags_print(&d, stderr);
            rc = ML_EXIT_INPUT;
        } else if (!a->quiet || a->output) {
            rc = ml_visual_emit(a->output, &text);
        }
        ml_diags_free(&d);
        ml_str_free(&text);
    }
    series_vec_free(&items);
    return rc;
}
