/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the command line shared by the example programs (idle-server,
 * idle-loadgen, rota-ttl-cache): durations with units, counts, the clear
 * one-line errors they give (the flag and the bad value named), and the
 * listen error that names the address and the port.
 */
#ifndef IDLE_CLI_H
#define IDLE_CLI_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char *cli_prog = "idle";

static inline void cli_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* Print "prog: message" and exit with status 2 (usage) . */
static inline void cli_die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cli_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try --help)\n");
    exit(2);
}

/*
 * A duration: a decimal number with an optional unit ns, us, ms, s (the
 * default) or m.  "30s", "100ms", "0.5", "2m".  Exits with a clear message
 * on anything else.
 */
static inline uint64_t cli_duration_ns(const char *opt, const char *arg)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    double scale;

    if (end == arg || errno != 0 || !(v >= 0))
        cli_die("%s: '%s' is not a duration (examples: 30s, 100ms, 0.5)", opt,
                arg);
    if (*end == '\0' || strcmp(end, "s") == 0)
        scale = 1e9;
    else if (strcmp(end, "ms") == 0)
        scale = 1e6;
    else if (strcmp(end, "us") == 0)
        scale = 1e3;
    else if (strcmp(end, "ns") == 0)
        scale = 1;
    else if (strcmp(end, "m") == 0)
        scale = 60e9;
    else
        cli_die("%s: unknown unit in '%s' (use ns, us, ms, s or m)", opt, arg);
    if (v * scale > 1e18)
        cli_die("%s: '%s' is too long", opt, arg);
    return (uint64_t)(v * scale + 0.5);
}

/* An integer in [lo, hi]. */
static inline long cli_long(const char *opt, const char *arg, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);

    if (end == arg || *end != '\0' || errno != 0)
        cli_die("%s: '%s' is not a number", opt, arg);
    if (v < lo || v > hi)
        cli_die("%s: %ld is out of range [%ld, %ld]", opt, v, lo, hi);
    return v;
}

/* A fraction in [0, 1]. */
static inline double cli_fraction(const char *opt, const char *arg)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);

    if (end == arg || *end != '\0' || errno != 0 || !(v >= 0 && v <= 1))
        cli_die("%s: '%s' is not a fraction between 0 and 1", opt, arg);
    return v;
}

/* The value of option argv[*i], which must exist. */
static inline const char *cli_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc)
        cli_die("option %s needs a value", argv[*i]);
    return argv[++*i];
}

/*
 * Print why listening on `addr` failed (errno value `err`: bind(),
 * listen() or socket()) with the address and port, and a hint for the
 * usual causes, then exit 1.
 */
static inline void cli_listen_die(const struct sockaddr_in *addr, int err)
    __attribute__((noreturn));
static inline void cli_listen_die(const struct sockaddr_in *addr, int err)
{
    char a[INET_ADDRSTRLEN];
    const char *why = strerror(err);
    inet_ntop(AF_INET, &addr->sin_addr, a, sizeof a);
    if (err == EADDRINUSE)
        why = "the port is already in use (choose another with --port)";
    else if (err == EADDRNOTAVAIL)
        why = "no such local address (see --bind)";
    else if (err == EACCES)
        why = "permission denied (ports below 1024 need privileges)";
    fprintf(stderr, "%s: cannot listen on %s:%u: %s\n", cli_prog, a,
            (unsigned)ntohs(addr->sin_port), why);
    exit(1);
}

/* Raise the soft RLIMIT_NOFILE to the hard limit; returns the new soft
 * limit.  (These machines cap the hard limit; nobody can raise it.) */
static inline long cli_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY ? 1L << 20 : (long)rl.rlim_cur;
}

/* A duration for humans: "100ms", "2s", "1.5s", "250us". */
static inline const char *cli_fmt_duration(uint64_t ns, char *buf, size_t len)
{
    if (ns >= 1000000000u)
        snprintf(buf, len, "%gs", (double)ns / 1e9);
    else if (ns >= 1000000u)
        snprintf(buf, len, "%gms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%gus", (double)ns / 1e3);
    return buf;
}

static inline uint64_t cli_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* IDLE_CLI_H */
