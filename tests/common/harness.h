/* SPDX-License-Identifier: MIT */
/*
 * harness.h - the check harness of every C test, header-only.
 *
 *   TEST(name) { CHECK(...); CHECK_EQ_U64(a, b); CHECK_CMP(a, <, b); ... }
 *   static const struct h_test tests[] = {H_TEST(name), ...};
 *   int main(int argc, char **argv) { return h_main(argc, argv, tests,
 *                                                   H_COUNT(tests)); }
 *
 * A failed check prints file, line, the expressions and both operands, and
 * fails its test; the test goes on (checks are expressions returning
 * whether they passed, so `if (!CHECK(p != NULL)) return;` stops early).  A
 * test that makes no check at all fails too: every test must be able to.
 * SKIP("why") ends a test that cannot run here; it counts as skipped.
 * h_main() runs the tests whose name contains argv[1] (all without one) and
 * ends with the line "N passed, M failed[, K skipped]"; its status is 1 if
 * any failed or none ran, 77 if every one that ran skipped, else 0.
 * Checks are made from the main thread only: helper threads and callbacks
 * on other threads record into atomics that the main thread checks.
 *
 * h_seed() reads ROTA_SEED (default: from the time) and always prints it;
 * h_rand() is the tests' one PRNG; h_env() reads an integer setting;
 * h_small() is true when ROTA_TEST_SCALE=small (valgrind);
 * h_expect_begin()/h_expect_end() bracket a planted fault.
 */
#ifndef ROTA_TEST_HARNESS_H
#define ROTA_TEST_HARNESS_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The exit status when every test that ran was skipped: CTest counts it
 * as a skip (tests/CMakeLists.txt sets SKIP_RETURN_CODE). */
#define H_SKIP_STATUS 77

struct h_test {
    const char *name;
    void (*fn)(void);
};

#define TEST(name) static void name(void)
#define H_TEST(name)                                                           \
    {                                                                          \
#name, name                                                            \
    }
#define H_COUNT(array) (sizeof(array) / sizeof((array)[0]))

static unsigned long h_checks; /* checks made by the running test */
static unsigned long h_failed; /* of which failed */
static bool h_expecting;       /* inside h_expect_begin() .. _end() */
static const char *h_skipped;  /* why the running test skipped, or NULL */

static inline bool h_report(bool ok, const char *file, int line)
{
    h_checks++;
    if (!ok) {
        h_failed++;
        fprintf(stderr, "%s:%d: check failed%s: ", file, line,
                h_expecting ? " (expected: a planted fault)" : "");
    }
    return ok;
}

/*
 * A planted-fault test runs the code under test with a fault it must catch:
 *   unsigned long mark = h_expect_begin();
 *   ... run with the fault; its checks fail ...
 *   CHECK(h_expect_end(mark) > 0);
 * h_expect_end() returns how many checks failed since the mark and takes
 * them back, so only the CHECK on that count decides the test.
 */
static inline unsigned long h_expect_begin(void)
{
    h_expecting = true;
    return h_failed;
}

static inline unsigned long h_expect_end(unsigned long mark)
{
    unsigned long caught = h_failed - mark;
    h_failed = mark;
    h_expecting = false;
    return caught;
}

static inline bool h_check(bool ok, const char *file, int line,
                           const char *expr)
{
    if (!h_report(ok, file, line))
        fprintf(stderr, "%s\n", expr);
    return ok;
}

static inline bool h_check_u64(uint64_t a, uint64_t b, const char *file,
                               int line, const char *ea, const char *eb)
{
    if (!h_report(a == b, file, line))
        fprintf(stderr,
                "%s == %s\n    left:  %" PRIu64 " (0x%" PRIx64 ")\n"
                "    right: %" PRIu64 " (0x%" PRIx64 ")\n",
                ea, eb, a, a, b, b);
    return a == b;
}

static inline bool h_check_int(long long a, long long b, const char *file,
                               int line, const char *ea, const char *eb)
{
    if (!h_report(a == b, file, line))
        fprintf(stderr, "%s == %s\n    left:  %lld\n    right: %lld\n", ea, eb,
                a, b);
    return a == b;
}

static inline bool h_check_ptr(const void *a, const void *b, const char *file,
                               int line, const char *ea, const char *eb)
{
    if (!h_report(a == b, file, line))
        fprintf(stderr, "%s == %s\n    left:  %p\n    right: %p\n", ea, eb,
                (void *)(uintptr_t)a, (void *)(uintptr_t)b);
    return a == b;
}

static inline bool h_check_str(const char *a, const char *b, const char *file,
                               int line, const char *ea, const char *eb)
{
    bool ok = a != NULL && b != NULL && strcmp(a, b) == 0;
    if (!h_report(ok, file, line))
        fprintf(stderr, "%s == %s\n    left:  \"%s\"\n    right: \"%s\"\n", ea,
                eb, a ? a : "(null)", b ? b : "(null)");
    return ok;
}

#define CHECK(cond) h_check((cond) ? true : false, __FILE__, __LINE__, #cond)
#define CHECK_EQ_U64(a, b)                                                     \
    h_check_u64((uint64_t)(a), (uint64_t)(b), __FILE__, __LINE__, #a, #b)
#define CHECK_EQ_INT(a, b)                                                     \
    h_check_int((long long)(a), (long long)(b), __FILE__, __LINE__, #a, #b)
#define CHECK_EQ_PTR(a, b)                                                     \
    h_check_ptr((const void *)(a), (const void *)(b), __FILE__, __LINE__, #a,  \
                #b)
#define CHECK_EQ_STR(a, b) h_check_str((a), (b), __FILE__, __LINE__, #a, #b)
/* A failed check with a printf-style message instead of an expression
 * (for conditions a single expression cannot show well). */
#define FAIL_AT(file, line, ...) h_failf((file), (line), __VA_ARGS__)
#define FAIL_MSG(...) h_failf(__FILE__, __LINE__, __VA_ARGS__)
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void
h_failf(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    h_report(false, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Relational checks: CHECK_CMP(a, <=, b) compares as signed, CHECK_CMPU as
 * unsigned 64-bit values; both print the two operands. */
#define CHECK_CMP(a, op, b)                                                    \
    h_check_cmp((long long)(a)op(long long)(b), (long long)(a),                \
                (long long)(b), __FILE__, __LINE__, #a " " #op " " #b)
#define CHECK_CMPU(a, op, b)                                                   \
    h_check_cmpu((uint64_t)(a)op(uint64_t)(b), (uint64_t)(a), (uint64_t)(b),   \
                 __FILE__, __LINE__, #a " " #op " " #b)

static inline bool h_check_cmp(bool ok, long long a, long long b,
                               const char *file, int line, const char *expr)
{
    if (!h_report(ok, file, line))
        fprintf(stderr, "%s\n    left:  %lld\n    right: %lld\n", expr, a, b);
    return ok;
}

static inline bool h_check_cmpu(bool ok, uint64_t a, uint64_t b,
                                const char *file, int line, const char *expr)
{
    if (!h_report(ok, file, line))
        fprintf(stderr, "%s\n    left:  %" PRIu64 "\n    right: %" PRIu64 "\n",
                expr, a, b);
    return ok;
}

/* rota_wheel_check() must pass; prints the violation it found. */
#define CHECK_WHEEL(w)                                                         \
    do {                                                                       \
        const char *why_ = NULL;                                               \
        int rc_ = rota_wheel_check((w), &why_);                                \
        if (!CHECK_EQ_INT(rc_, 0))                                             \
            fprintf(stderr, "    rota_wheel_check: %s\n",                      \
                    why_ ? why_ : "(no reason)");                              \
    } while (0)

/*
 * SKIP("why"): the running test cannot run here (a clock the system does
 * not have, a library not built).  It ends the test, which counts as
 * skipped, never as passed; checks made before it still count, and one
 * that failed still fails the test.
 */
#define SKIP(why)                                                              \
    do {                                                                       \
        h_skipped = (why);                                                     \
        return;                                                                \
    } while (0)

/* ------------------------------------------------------ seed and scale */

/* An integer setting from the environment (decimal or 0x hex), or dflt. */
static inline uint64_t h_env(const char *name, uint64_t dflt)
{
    const char *env = getenv(name);
    return env != NULL && *env != '\0' ? strtoull(env, NULL, 0) : dflt;
}

/* ROTA_SEED (decimal or 0x hex) or a time-based seed; always printed. */
static inline uint64_t h_seed(void)
{
    const char *env = getenv("ROTA_SEED");
    uint64_t seed;

    if (env != NULL && *env != '\0') {
        seed = h_env("ROTA_SEED", 0);
    } else {
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        seed = (uint64_t)ts.tv_sec * 1000000007u + (uint64_t)ts.tv_nsec;
    }
    printf("seed: %" PRIu64 " (ROTA_SEED=%" PRIu64 " repeats this run)\n", seed,
           seed);
    fflush(stdout);
    return seed;
}

/* ROTA_TEST_SCALE=small: valgrind runs ~30x slower, do fewer operations. */
static inline bool h_small(void)
{
    const char *env = getenv("ROTA_TEST_SCALE");
    return env != NULL && strcmp(env, "small") == 0;
}

/* splitmix64: tiny, good enough for test streams. */
static inline uint64_t h_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ main */

static inline int h_main(int argc, char **argv, const struct h_test *tests,
                         size_t count)
{
    unsigned passed = 0, failed = 0, skipped = 0;
    const char *filter = argc > 1 ? argv[1] : NULL;

    for (size_t i = 0; i < count; i++) {
        if (filter != NULL && strstr(tests[i].name, filter) == NULL)
            continue;
        h_checks = 0;
        h_failed = 0;
        h_skipped = NULL;
        tests[i].fn();
        if (h_checks == 0 && h_skipped == NULL) {
            fprintf(stderr, "%s: made no check\n", tests[i].name);
            h_failed = 1;
        }
        if (h_failed) {
            failed++;
            printf("FAIL %s (%lu checks)\n", tests[i].name, h_checks);
        } else if (h_skipped != NULL) {
            skipped++;
            printf("skip %s: %s\n", tests[i].name, h_skipped);
        } else {
            passed++;
            printf("ok   %s (%lu checks)\n", tests[i].name, h_checks);
        }
        fflush(stdout);
    }
    printf("%u passed, %u failed", passed, failed);
    if (skipped > 0)
        printf(", %u skipped", skipped);
    printf("\n");
    if (failed != 0)
        return 1;
    /* Nothing ran: a filter that matched no test is a mistake, and only
     * skips is a skip (CTest's SKIP_RETURN_CODE). */
    if (passed == 0)
        return skipped > 0 ? H_SKIP_STATUS : 1;
    return 0;
}

#endif /* ROTA_TEST_HARNESS_H */
