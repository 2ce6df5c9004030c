/* SPDX-License-Identifier: MIT */
/*
 * benchutil.c - the helpers every bench program shares (benchutil.h).
 */
#include "benchutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *bench_program = "bench";
const char *bench_die_note;
int bench_die_status = 1;

_Noreturn void bench_die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "\n%s: ", bench_program);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (bench_die_note)
        fprintf(stderr, "%s: %s\n", bench_program, bench_die_note);
    exit(bench_die_status);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int count)
{
    qsort(v, (size_t)count, sizeof *v, cmp_double);
    return count % 2 ? v[count / 2] : (v[count / 2 - 1] + v[count / 2]) / 2;
}

void bench_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void bench_cpu_model(char *buf, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(buf, size, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ' || *p == '\t')
                    p++;
                p[strcspn(p, "\n")] = '\0';
                snprintf(buf, size, "%s", p);
            }
            break;
        }
    }
    fclose(f);
}

int bench_mkdir_parents(const char *path)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}
