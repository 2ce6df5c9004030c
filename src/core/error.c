/* SPDX-License-Identifier: MIT */
/* rota_strerror(): messages come from the same X-macro list as the codes, so
 * a new code cannot be added without its message.  Also the misuse handler
 * of debug builds (rota.h, DEBUG BUILDS), which every build accepts so that
 * a program links against either. */
#define _GNU_SOURCE /* process_vm_readv(), for a debug build */
#include "rota.h"

#include "wheel_internal.h" /* and through it wheel_debug.h */

const char *rota_strerror(int error)
{
    switch (error) {
    case 0:
        return "success";
#define ROTA_MESSAGE_CASE(name, value, message)                                \
    case name:                                                                 \
        return message;
        ROTA_ERRORS(ROTA_MESSAGE_CASE)
#undef ROTA_MESSAGE_CASE
    default:
        /* Many calls return a count or a flag on success: say so, rather
         * than call it an unknown error. */
        return error > 0 ? "not an error: a non-negative result (a count or "
                           "a flag of a successful call)"
                         : "unknown error (not a rota error code)";
    }
}

/* Set once at start-up (rota.h), so plain variables. */
static rota_misuse_fn *misuse_fn;
static void *misuse_arg;

void rota_debug_set_handler(rota_misuse_fn *fn, void *arg)
{
    misuse_fn = fn;
    misuse_arg = arg;
}

bool rota_debug_enabled(void)
{
#ifdef ROTA_DEBUG
    return true;
#else
    return false;
#endif
}

#include <stdio.h>
#include <stdlib.h>

#if defined(ROTA_DEBUG) && defined(__linux__)
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>
#endif

/* Every build: a wheel whose lists a walk found looping (wheel.c, "walks
 * that end").  The handler first, as for a debug build's reports; then,
 * whatever it does if it returns, the message and abort(): the wheel
 * cannot go on, and a loud stop beats a silent spin. */
void rota__wheel_corrupt(const struct rota_wheel *wheel,
                         const struct rota_timer *timer)
{
    if (misuse_fn != NULL)
        misuse_fn(MISUSE_CORRUPT, timer, misuse_arg);
    fprintf(stderr, "rota: %s (wheel %p)\n", MISUSE_CORRUPT,
            (const void *)wheel);
    abort();
}

#ifdef ROTA_DEBUG
void rota__debug_report(const char *misuse, const struct rota_timer *timer)
{
    if (misuse_fn != NULL) {
        misuse_fn(misuse, timer, misuse_arg);
        return;
    }
    /* What glibc does on "double free or corruption": say it, then stop
     * where a debugger or a core dump shows the caller. */
    fprintf(stderr, "rota: %s (timer %p)\n", misuse, (const void *)timer);
    abort();
}

void rota__debug_report_wheel(const char *misuse,
                              const struct rota_wheel *wheel)
{
    if (misuse_fn != NULL) {
        misuse_fn(misuse, (const struct rota_timer *)(const void *)wheel,
                  misuse_arg);
        return;
    }
    fprintf(stderr, "rota: %s (wheel %p)\n", misuse, (const void *)wheel);
    abort();
}

void rota__debug_fatal(const char *misuse, const struct rota_timer *timer)
{
    rota__debug_report(misuse, timer);
    fprintf(stderr, "rota: %s (timer %p): the wheel cannot go on\n", misuse,
            (const void *)timer);
    abort();
}

/* The kernel copies the bytes (Linux: process_vm_readv() of this process)
 * and fails with EFAULT where they cannot be read, so a wrong guess is a
 * failed call, not a fault.  Where the call is missing or refused (ENOSYS;
 * EPERM under some sandboxes), or on another system, the answer is true:
 * the walk then follows the link as it would without this. */
bool rota__debug_readable(const void *p, size_t size)
{
#ifdef __linux__
    unsigned char copy[sizeof(struct rota_timer)];
    if (size > sizeof copy) /* callers ask about one timer */
        size = sizeof copy;
    struct iovec local = {copy, size};
    struct iovec remote = {(void *)(uintptr_t)p, size};
    int saved = errno;
    ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    bool readable = got == (ssize_t)size || (got < 0 && errno != EFAULT);
    errno = saved;
    return readable;
#else
    (void)p, (void)size;
    return true;
#endif
}
#endif
