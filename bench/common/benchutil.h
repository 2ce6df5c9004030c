/* SPDX-License-Identifier: MIT */
/*
 * benchutil.h - what every bench program shares: stopping with a message,
 * the median of repetitions, JSON strings, the CPU's name and the
 * directories of an output path.  Each program links common/benchutil.c
 * once; nothing here knows a workload or an implementation.
 */
#ifndef ROTA_BENCHUTIL_H
#define ROTA_BENCHUTIL_H

#include <stddef.h>
#include <stdio.h>

/* The program's name, printed before bench_die()'s message, and what it
 * adds after it (NULL: nothing); the exit status bench_die() returns. */
extern const char *bench_program;
extern const char *bench_die_note;
extern int bench_die_status;

/* Prints "PROGRAM: message" (and the note) on stderr and exits. */
_Noreturn void bench_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* The median of v[0..count) (sorts v); the mean of the middle two for an
 * even count. */
double bench_median(double *v, int count);

/* Writes s as a JSON string, quotes included. */
void bench_json_string(FILE *f, const char *s);

/* The CPU's model name from /proc/cpuinfo, or "unknown". */
void bench_cpu_model(char *buf, size_t size);

/* Creates every directory in path up to its last '/' (mkdir -p of the
 * file's folder); 0, or -1 with errno set. */
int bench_mkdir_parents(const char *path);

#endif /* ROTA_BENCHUTIL_H */
