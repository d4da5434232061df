/* SPDX-License-Identifier: MIT */
/* yamlloop.c — the yardstick: a bare libyaml event loop over a file (read into memory first, as
 * the loader does). Prints "events seconds". Usage: yamlloop FILE */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <yaml.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: yamlloop FILE\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len + 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    fclose(f);
    yaml_parser_t p;
    yaml_event_t ev;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, buf, (size_t)len);
    long events = 0;
    for (;;) {
        if (!yaml_parser_parse(&p, &ev)) {
            fprintf(stderr, "yaml error: %s\n", p.problem);
            return 2;
        }
        events++;
        int done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (done)
            break;
    }
    yaml_parser_delete(&p);
    free(buf);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%ld %.3f\n", events, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return 0;
}
