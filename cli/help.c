/* SPDX-License-Identifier: MIT */
/* help.c — usage, man page and bash completion from the option rows (help.h). */
#include "help.h"
#include "exec/env.h"

#include <string.h>

typedef enum { HELP_TEXT, HELP_MAN, HELP_BASH } help_mode;

/* Set only while a generator runs every command's --help; the commands themselves never see it. */
static help_mode mode = HELP_TEXT;

#define TEXT_WIDTH 94  /* the usage texts' own width */
#define HELP_COL 24    /* where an option's sentence starts */

/* "-w, --world N" or "    --gpus N" */
static void option_left(const ml_opt *o, char *buf, size_t size) {
    snprintf(buf, size, "%s%s%s%s%s", o->alias ? o->alias : "  ", o->alias ? ", " : "  ",
             o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

/* Word-wraps text from column col to TEXT_WIDTH, continuation lines at HELP_COL. */
static void wrap(FILE *f, const char *text, int col) {
    const char *p = text;
    while (*p) {
        size_t w = strcspn(p, " ");
        if (col > HELP_COL && col + 1 + (int)w > TEXT_WIDTH) {
            fprintf(f, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL || p != text) {
            if (p != text) {
                fputc(' ', f);
                col++;
            }
        }
        fwrite(p, 1, w, f);
        col += (int)w;
        p += w;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

static void text_options(FILE *f, const ml_opt *rows, size_t n) {
    fputs("options:\n", f);
    for (size_t k = 0; k < n; k++) {
        char left[128];
        option_left(&rows[k], left, sizeof left);
        int col = fprintf(f, "  %s", left);
        if (col < HELP_COL) {
            fprintf(f, "%*s", HELP_COL - col, "");
            col = HELP_COL;
        } else {
            fputs("  ", f);
            col += 2;
        }
        wrap(f, rows[k].help ? rows[k].help : "", col);
    }
}

/* troff-safe text: backslashes doubled as \e, a leading '.' or '\'' guarded, '-' as \-. */
static void man_text(FILE *f, const char *s, size_t len, bool line_start) {
    for (size_t k = 0; k < len; k++) {
        char c = s[k];
        if (line_start && (c == '.' || c == '\''))
            fputs("\\&", f);
        line_start = c == '\n';
        if (c == '\\')
            fputs("\\e", f);
        else if (c == '-')
            fputs("\\-", f);
        else
            fputc(c, f);
    }
}

/* An option's alias, name or argument in a font: `before` switches to it, `after` back. */
static void man_styled(FILE *f, const char *before, const char *s, const char *after) {
    fputs(before, f);
    man_text(f, s, strlen(s), false);
    fputs(after, f);
}

static void man_options(FILE *f, const ml_opt *rows, size_t n) {
    fputs(".PP\nOptions:\n", f);
    for (size_t k = 0; k < n; k++) {
        const ml_opt *o = &rows[k];
        fputs(".TP\n", f);
        if (o->alias)
            man_styled(f, "\\fB", o->alias, "\\fR, ");
        man_styled(f, "\\fB", o->name, "\\fR");
        if (o->arg)
            man_styled(f, " \\fI", o->arg, "\\fR");
        fputc('\n', f);
        const char *h = o->help ? o->help : "";
        man_text(f, h, strlen(h), true);
        fputc('\n', f);
    }
}

/* Prose as written (the texts are laid out by hand: lists, examples), in no-fill mode. */
static void man_prose(FILE *f, const char *s, size_t len) {
    if (!len)
        return;
    fputs(".PP\n.nf\n", f);
    man_text(f, s, len, true);
    if (s[len - 1] != '\n')
        fputc('\n', f);
    fputs(".fi\n", f);
}

/* One case branch: the options of cmd, then what follows an option that takes a value. */
static void bash_command(FILE *f, const char *cmd, const ml_opt *rows, size_t n) {
    fprintf(f, "    %s)\n        case \"$prev\" in\n", cmd);
    for (size_t k = 0; k < n; k++) {
        const ml_opt *o = &rows[k];
        if (o->kind == OPT_FLAG)
            continue;
        fprintf(f, "        %s%s%s)", o->name, o->alias ? "|" : "", o->alias ? o->alias : "");
        if (o->choices) {
            fputs(" COMPREPLY=($(compgen -W \"", f);
            for (size_t j = 0; o->choices[j]; j++)
                fprintf(f, "%s%s", j ? " " : "", o->choices[j]);
            fputs("\" -- \"$cur\")); return ;;\n", f);
        } else if (o->arg && (!strcmp(o->arg, "FILE") || !strcmp(o->arg, "DIR"))) {
            fputs(" _memlife_files; return ;;\n", f);
        } else {
            fputs(" return ;;\n", f);   /* a number or a name: nothing to offer */
        }
    }
    fputs("        esac\n        opts=\"", f);
    for (size_t k = 0; k < n; k++)
        fprintf(f, "%s%s%s%s", k ? " " : "", rows[k].name, rows[k].alias ? " " : "",
                rows[k].alias ? rows[k].alias : "");
    fputs("\" ;;\n", f);
}

void ml_help_render(FILE *f, const char *cmd, const char *usage, const ml_opt *rows, size_t n) {
    const char *mark = strstr(usage, "@options\n");
    size_t head = mark ? (size_t)(mark - usage) : strlen(usage);
    const char *tail = mark ? mark + strlen("@options\n") : "";
    switch (mode) {
    case HELP_TEXT:
        fwrite(usage, 1, head, f);
        text_options(f, rows, n);
        if (*tail)
            fputc('\n', f);
        fputs(tail, f);
        break;
    case HELP_MAN:
        /* the text's first paragraph is its "usage:" synopsis; the man page gives it as such */
        fprintf(f, ".SS \"memlife %s\"\n", cmd);
        man_prose(f, usage, head);
        man_options(f, rows, n);
        man_prose(f, tail, strlen(tail));
        break;
    case HELP_BASH:
        bash_command(f, cmd, rows, n);
        break;
    }
}

/* Runs every command's --help in mode m (usage goes to stdout, which f must be). */
static void each_command(help_mode m, const ml_command *cmds, size_t n) {
    mode = m;
    for (size_t k = 0; k < n; k++) {
        if (!strcmp(cmds[k].name, "help"))
            continue;
        char name[32], help[] = "--help";
        snprintf(name, sizeof name, "%s", cmds[k].name);
        char *argv[] = {name, help, NULL};
        cmds[k].run(2, argv);
    }
    mode = HELP_TEXT;
}

void ml_help_man(FILE *f, const ml_command *cmds, size_t n) {
    fprintf(f,
            ".\\\" memlife.1 — generated by 'memlife help --man' from the command and option tables;\n"
            ".\\\" edit cli/, not this file.\n"
            ".TH MEMLIFE 1 \"\" \"memlife %s\" \"User Commands\"\n"
            ".SH NAME\nmemlife \\- predict and measure the GPU memory lifetimes of NCCL collective "
            "schedules\n"
            ".SH SYNOPSIS\n.B memlife\n.I COMMAND\n[\\fIOPTIONS\\fR] \\fIFILE\\fR...\n.br\n"
            ".B memlife\n\\fB\\-\\-version\\fR | \\fB\\-\\-help\\fR\n"
            ".SH DESCRIPTION\nmemlife reads YAML schedules (which buffers each rank allocates, "
            "which collectives run on them, where the program synchronizes and when it frees), "
            "predicts the steady and peak memory of every rank without a GPU, lints them, gates "
            "CI on their expectations, and runs them on CPUs (Open MPI) or GPUs (CUDA + NCCL) to "
            "measure. A schedule named \\fB\\-\\fR is read from standard input.\n"
            "Options follow the command; short options bundle (\\fB\\-qw4\\fR), values attach "
            "(\\fB\\-w4\\fR, \\fB\\-\\-world=4\\fR), and \\fB\\-\\-\\fR ends the options.\n"
            ".SH COMMANDS\n",
            MEMLIFE_VERSION);
    for (size_t k = 0; k < n; k++) {
        fprintf(f, ".TP\n.B %s\n", cmds[k].name);
        man_text(f, cmds[k].summary, strlen(cmds[k].summary), true);
        fputc('\n', f);
    }
    fflush(f);
    each_command(HELP_MAN, cmds, n);
    fflush(stdout);
    fputs(".SH EXIT STATUS\n.TP\n0\nsuccess\n.TP\n1\nan expectation, a data check, or the "
          "baseline gate failed\n.TP\n2\nbad input: syntax, usage, a lint error or hazard\n.TP\n"
          "3\nruntime failure (a rank died, out of memory, a deadline passed)\n"
          ".SH ENVIRONMENT\n",
          f);
    /* the table every variable is checked by (exec/env.c), so that the page lists them all */
    const char *name, *doc;
    for (size_t k = 0; (doc = ml_env_doc(k, &name)) != NULL; k++)
        fprintf(f, ".TP\n.B %s\n%s\n", name, doc);
    fputs(".SH FILES\n.TP\n.I /usr/share/doc/memlife\nthe schedule language, JSON keys, example "
          "schedules and the CI gate example\n"
          ".SH SEE ALSO\n.BR mpirun (1)\n",
          f);
}

void ml_help_bash(FILE *f, const ml_command *cmds, size_t n) {
    fputs("# bash completion for memlife — generated by 'memlife help --bash-completion' from the\n"
          "# command and option tables; edit cli/, not this file.\n"
          "_memlife_files() {\n"
          "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    compopt -o filenames 2>/dev/null\n"
          "}\n"
          "_memlife() {\n"
          "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
          "    COMPREPLY=()\n"
          "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "        COMPREPLY=($(compgen -W \"",
          f);
    for (size_t k = 0; k < n; k++)
        fprintf(f, "%s ", cmds[k].name);
    fputs("--version --help\" -- \"$cur\"))\n"
          "        return\n"
          "    fi\n"
          "    local opts=\"\"\n"
          "    case \"${COMP_WORDS[1]}\" in\n"
          "    help) COMPREPLY=($(compgen -W \"",
          f);
    for (size_t k = 0; k < n; k++)
        fprintf(f, "%s%s", k ? " " : "", cmds[k].name);
    fputs("\" -- \"$cur\")); return ;;\n", f);
    fflush(f);
    each_command(HELP_BASH, cmds, n);
    fflush(stdout);
    fputs("    *) return ;;\n"
          "    esac\n"
          "    if [[ \"$cur\" == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "    else\n"
          "        _memlife_files\n"
          "    fi\n"
          "}\n"
          "complete -F _memlife memlife\n",
          f);
}
