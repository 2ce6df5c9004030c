/* SPDX-License-Identifier: MIT */
/*
 * test_debug.c - a debug build (ROTA_DEBUG) names each misuse that a normal
 * build lets corrupt the wheel or fire a stale callback (rota.h, DEBUG
 * BUILDS).  One case per misuse, each as a C user makes it:
 *
 *   init_of_pending_timer           rota_timer_init() of an armed timer
 *   reused_memory_from_a_free_list  a pool's free-list pointer written over
 *                                   an idle timer, armed again without init
 *   idle_timer_copied_by_assignment a struct copy of an idle timer, armed
 *   pending_timer_moved_by_memcpy   a pending timer memcpy'd, then cancelled
 *                                   at its new address
 *   pending_timer_freed_found_by_advance   its memory reused while pending;
 *                                   the next advance walks its slot
 *   pending_timer_freed_found_by_cancel    the same, found by the cancel of
 *                                   its neighbour in the list
 *   default_report_aborts_with_the_name    no handler: a message on stderr
 *                                   naming the misuse and the timer, abort()
 *
 * And two cases that are no misuse, where a debug build must neither
 * report nor crash: rota_timer_init() of memory whose leftover bytes look
 * like a pending timer's (init_after_wheel_unmapped,
 * init_after_relocate_and_free).
 *
 * The memory "freed" is kept alive (static objects overwritten in place, as
 * a pool or an allocator reuses it), so ASan and valgrind see no invalid
 * access and the test is about the library's own checks.
 *
 * Each misuse runs in a child process (fork): where nothing catches it the
 * wheel is corrupt and the child may crash, which the parent sees as "not
 * caught", never as its own crash.  The child records in shared memory what
 * the handler was told and what the calls returned; the parent checks it.
 *
 * Built twice (tests/CMakeLists.txt): test_debug against a debug build of
 * the core, where every check must pass; and test_debug_missed against a
 * normal build, with ROTA_TEST_MISSED defined, where every case must FAIL
 * (each case's checks are a planted fault there): proof that each case
 * exercises a misuse a normal build does not catch, so each check can fail.
 */
#define _DEFAULT_SOURCE /* fork, mmap MAP_ANONYMOUS, pipe */
#include <rota.h>

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* rota.h, DEBUG BUILDS: the names a debug build reports. */
#define INIT_PENDING "rota_timer_init() of a pending timer"
#define OVERWRITTEN                                                            \
    "timer memory overwritten or reused without rota_timer_init()"
#define MOVED "pending timer moved or copied without rota_timer_relocate()"
#define FREED "pending timer freed or overwritten without rota_timer_cancel()"

/* In test_debug_missed every case's checks must fail (see the top). */
#ifdef ROTA_TEST_MISSED
#define CAUGHT_BEGIN() unsigned long missed_mark_ = h_expect_begin()
#define CAUGHT_END() CHECK(h_expect_end(missed_mark_) > 0)
#else
#define CAUGHT_BEGIN() ((void)0)
#define CAUGHT_END() ((void)0)
#endif

/* What a child saw, in memory shared with the parent. */
struct outcome {
    int reports;           /* handler calls */
    char misuse[160];      /* the first report's text */
    const void *timer;     /* and its timer */
    int rc;                /* the misusing call's return */
    int check;             /* rota_wheel_check() afterwards */
    int fired[2];          /* callbacks run, per kind */
    int intact;            /* the freed memory's new owner untouched */
    int finished;          /* the scenario ran to its end */
    int signal;            /* the child died of this signal (parent) */
    char stderr_text[512]; /* the child's stderr (parent, when captured) */
};

static struct outcome *out;
static jmp_buf out_of_rota; /* where a report found in a walk returns */
static int jump_on_report;

static void on_misuse(const char *misuse, const struct rota_timer *timer,
                      void *arg)
{
    (void)arg;
    if (out->reports++ == 0) {
        snprintf(out->misuse, sizeof out->misuse, "%s", misuse);
        out->timer = timer;
    }
    if (jump_on_report)
        longjmp(out_of_rota, 1); /* rota.h: allowed; the wheel is dropped */
}

/* Callbacks of two kinds, so that a stale callback shows. */
static void fire0(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w, (void)t, (void)late;
    out->fired[0]++;
}
static void fire1(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w, (void)t, (void)late;
    out->fired[1]++;
}

/*
 * Run scenario() in a child with the handler set (unless `handler` is
 * false), its stderr captured; returns the outcome.  A child that crashes
 * or aborts leaves what it recorded so far, and the signal.
 */
static struct outcome *run(void (*scenario)(void), bool handler)
{
    static struct outcome *shared;
    if (shared == NULL) {
        shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED) {
            perror("mmap");
            exit(1);
        }
    }
    memset(shared, 0, sizeof *shared);
    out = shared;
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(1);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        close(fds[1]);
        rota_debug_set_handler(handler ? on_misuse : NULL, NULL);
        if (setjmp(out_of_rota) == 0)
            scenario();
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    for (;;) {
        char buf[256];
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n <= 0)
            break;
        /* Keep the start (the report); echo everything for the log. */
        fwrite(buf, 1, (size_t)n, stderr);
        size_t room = sizeof shared->stderr_text - 1 - len;
        size_t take = (size_t)n < room ? (size_t)n : room;
        memcpy(shared->stderr_text + len, buf, take);
        len += take;
    }
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        ;
    if (WIFSIGNALED(status))
        shared->signal = WTERMSIG(status);
    return shared;
}

/* ------------------------------------------------------------- objects */

struct conn {
    struct rota_timer timer;
    int fd;
};

static struct rota_wheel wheel;
static struct conn a, b, c, moved;

/* a, b, c pending in that order at the same deadline: one slot's list, so
 * b has timers on both sides. */
static void three_pending(void)
{
    rota_wheel_init(&wheel, 0);
    rota_timer_init(&a.timer, fire0);
    rota_timer_init(&b.timer, fire0);
    rota_timer_init(&c.timer, fire0);
    rota_timer_arm_at(&wheel, &a.timer, 10);
    rota_timer_arm_at(&wheel, &b.timer, 10);
    rota_timer_arm_at(&wheel, &c.timer, 10);
}

/* ------------------------------------------------ (a) init of a pending */

static void scenario_init_pending(void)
{
    three_pending();
    rota_timer_init(&b.timer, fire1); /* the misuse: b is still armed */
    out->check = rota_wheel_check(&wheel, NULL);
    if (out->check == 0) /* else the walk would crash */
        rota_wheel_advance(&wheel, 10);
    out->finished = 1;
}

TEST(init_of_pending_timer)
{
    struct outcome *o = run(scenario_init_pending, true);
    CAUGHT_BEGIN();
    CHECK_EQ_INT(o->reports, 1);
    CHECK_EQ_STR(o->misuse, INIT_PENDING);
    CHECK_EQ_PTR(o->timer, &b.timer);
    /* The call did nothing: the wheel is intact and b fires, once, with
     * the callback it was armed with. */
    CHECK_EQ_INT(o->check, 0);
    CHECK_EQ_INT(o->fired[0], 3);
    CHECK_EQ_INT(o->fired[1], 0);
    CHECK(o->finished);
    CAUGHT_END();
}

/* ---------------------------------------- (b) memory reused without init */

/* A pool whose free list lives in the objects' first word, as most do. */
union pool_item {
    struct conn conn;
    union pool_item *next_free;
};
static union pool_item pool[2];
static union pool_item *free_list;

static void pool_put(union pool_item *item)
{
    item->next_free = free_list;
    free_list = item;
}

static union pool_item *pool_get(void)
{
    union pool_item *item = free_list;
    free_list = item->next_free;
    return item;
}

static void scenario_free_list(void)
{
    rota_wheel_init(&wheel, 0);
    /* A connection times out, and its object goes back to the pool. */
    union pool_item *item = &pool[0];
    rota_timer_init(&item->conn.timer, fire0);
    rota_timer_arm_at(&wheel, &item->conn.timer, 5);
    rota_wheel_advance(&wheel, 5);
    pool_put(&pool[1]);
    pool_put(item);
    /* The next owner forgets rota_timer_init() and arms it. */
    struct conn *reused = &pool_get()->conn;
    out->rc = rota_timer_arm_at(&wheel, &reused->timer, 20);
    rota_wheel_advance(&wheel, 20);
    out->finished = 1;
}

TEST(reused_memory_from_a_free_list)
{
    struct outcome *o = run(scenario_free_list, true);
    CAUGHT_BEGIN();
    CHECK_EQ_INT(o->reports, 1);
    CHECK_EQ_STR(o->misuse, OVERWRITTEN);
    CHECK_EQ_PTR(o->timer, &pool[0].conn.timer);
    CHECK_EQ_INT(o->rc, ROTA_EUNINIT);
    CHECK_EQ_INT(o->fired[0], 1); /* the first life's fire, no stale one */
    CHECK(o->finished);
    CAUGHT_END();
}

static void scenario_copied(void)
{
    rota_wheel_init(&wheel, 0);
    rota_timer_init(&a.timer, fire0);
    /* A new connection made from an old one by assignment: b's timer is a
     * copy of a's, never initialised at b's address. */
    b = a;
    b.fd = 7;
    out->rc = rota_timer_arm_at(&wheel, &b.timer, 20);
    rota_wheel_advance(&wheel, 20);
    out->finished = 1;
}

TEST(idle_timer_copied_by_assignment)
{
    struct outcome *o = run(scenario_copied, true);
    CAUGHT_BEGIN();
    CHECK_EQ_INT(o->reports, 1);
    CHECK_EQ_STR(o->misuse, OVERWRITTEN);
    CHECK_EQ_PTR(o->timer, &b.timer);
    CHECK_EQ_INT(o->rc, ROTA_EUNINIT);
    CHECK_EQ_INT(o->fired[0], 0); /* a's callback never ran for b */
    CHECK(o->finished);
    CAUGHT_END();
}

/* ------------------------------------------- (c) a pending timer moved */

static void scenario_memcpy(void)
{
    three_pending();
    /* b's object moves (say, a vector grew) without rota_timer_relocate();
     * the old memory stays as it was. */
    memcpy(&moved, &b, sizeof moved);
    out->rc = rota_timer_cancel(&wheel, &moved.timer);
    out->check = rota_wheel_check(&wheel, NULL);
    out->finished = 1;
}

TEST(pending_timer_moved_by_memcpy)
{
    struct outcome *o = run(scenario_memcpy, true);
    CAUGHT_BEGIN();
    CHECK_EQ_INT(o->reports, 1);
    CHECK_EQ_STR(o->misuse, MOVED);
    CHECK_EQ_PTR(o->timer, &moved.timer);
    CHECK_EQ_INT(o->rc, ROTA_EUNINIT);
    CHECK_EQ_INT(o->check, 0); /* refused: the lists are untouched */
    CHECK(o->finished);
    CAUGHT_END();
}

/* ---------------------------------- (c) a pending timer freed, reused */

/* b's object is freed while its timer is armed, and the allocator hands
 * the memory to another object, which writes all of it. */
static void free_b_while_pending(void)
{
    memset(&b, 0x5a, sizeof b);
}

static void scenario_freed_advance(void)
{
    three_pending();
    free_b_while_pending();
    jump_on_report = 1; /* a report inside a walk cannot return */
    rota_wheel_advance(&wheel, 10);
    out->finished = 1;
}

TEST(pending_timer_freed_found_by_advance)
{
    struct outcome *o = run(scenario_freed_advance, true);
    CAUGHT_BEGIN();
    CHECK_EQ_INT(o->reports, 1);
    CHECK_EQ_STR(o->misuse, FREED);
    CHECK_EQ_PTR(o->timer, &b.timer);
    CHECK_EQ_INT(o->signal, 0);
    CHECK(!o->finished); /* the handler jumped out of the advance */
    CAUGHT_END();
}

static void scenario_freed_cancel(void)
{
    three_pending();
    free_b_while_pending();
    /* a's neighbour is gone: unlinking a would write into b's new owner. */
    out->rc = rota_timer_cancel(&wheel, &a.timer);
    struct conn pattern;
    memset(&pattern, 0x5a, sizeof pattern);
    out->intact = memcmp(&b, &pattern, sizeof b) == 0;
    out->finished = 1;
}

TEST(pending_timer_freed_found_by_cancel)
{
    struct outcome *o = run(scenario_freed_cancel, true);
    CAUGHT_BEGIN();
    CHECK_EQ_INT(o->reports, 1);
    CHECK_EQ_STR(o->misuse, FREED);
    CHECK_EQ_PTR(o->timer, &b.timer);
    CHECK_EQ_INT(o->rc, ROTA_ECORRUPT);
    CHECK(o->intact); /* nothing written into the memory's new owner */
    CHECK(o->finished);
    CAUGHT_END();
}

/* --------------------------- (d) no misuse: leftover bytes, no crash */

/*
 * Not misuses: memory whose leftover bytes look like a pending timer's,
 * given to rota_timer_init() as the start of a new timer's life.  The
 * debug build must see that no live wheel links it, and must not follow
 * its leftover links into memory that is gone.  A normal build reads
 * nothing here, so test_debug_missed leaves these cases out.
 */
#ifndef ROTA_TEST_MISSED

/* A wheel in memory of its own, dropped with a timer pending (rota.h
 * allows it when the timer's memory goes too), its pages then unmapped:
 * the timer's memory still holds a sealed pending timer whose links point
 * into nothing. */
static void scenario_dropped_wheel(void)
{
    size_t size = sizeof(struct rota_wheel);
    struct rota_wheel *gone = mmap(NULL, size, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (gone == MAP_FAILED)
        return;
    rota_wheel_init(gone, 0);
    rota_timer_init(&c.timer, fire0);
    rota_timer_arm_at(gone, &c.timer, 10);
    munmap(gone, size);
    /* c's memory, handed to a new owner, starts a new timer. */
    rota_wheel_init(&wheel, 0);
    rota_timer_init(&c.timer, fire1);
    out->rc = rota_timer_arm_at(&wheel, &c.timer, 5);
    rota_wheel_advance(&wheel, 5);
    out->check = rota_wheel_check(&wheel, NULL);
    out->finished = 1;
}

TEST(init_after_wheel_unmapped)
{
    struct outcome *o = run(scenario_dropped_wheel, true);
    CHECK_EQ_INT(o->signal, 0);
    CHECK_EQ_INT(o->reports, 0);
    CHECK_EQ_INT(o->rc, 0);
    CHECK_EQ_INT(o->fired[0], 0);
    CHECK_EQ_INT(o->fired[1], 1);
    CHECK_EQ_INT(o->check, 0);
    CHECK(o->finished);
}

/* A keyed table's growth: a pending timer is relocated out of the old
 * table, whose memory is freed; the allocator writes its free list into
 * the old slot's first words (here: addresses of a page that is gone),
 * and the memory comes back as a new timer. */
static void scenario_relocated_then_freed(void)
{
    long page = sysconf(_SC_PAGESIZE);
    char *hole = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hole == MAP_FAILED)
        return;
    munmap(hole, (size_t)page);
    rota_wheel_init(&wheel, 0);
    rota_timer_init(&a.timer, fire0);
    rota_timer_arm_at(&wheel, &a.timer, 10);
    out->rc = rota_timer_relocate(&wheel, &a.timer, &moved.timer);
    a.timer.link_.next = (struct rota_link *)(void *)hole;
    a.timer.link_.prev = (struct rota_link *)(void *)(hole + 64);
    rota_timer_init(&a.timer, fire1);
    rota_timer_arm_at(&wheel, &a.timer, 20);
    rota_wheel_advance(&wheel, 20);
    out->check = rota_wheel_check(&wheel, NULL);
    out->finished = 1;
}

TEST(init_after_relocate_and_free)
{
    struct outcome *o = run(scenario_relocated_then_freed, true);
    CHECK_EQ_INT(o->signal, 0);
    CHECK_EQ_INT(o->reports, 0);
    CHECK_EQ_INT(o->rc, 0);
    CHECK_EQ_INT(o->fired[0], 1); /* the relocated timer, at 10 */
    CHECK_EQ_INT(o->fired[1], 1); /* the new one, at 20 */
    CHECK_EQ_INT(o->check, 0);
    CHECK(o->finished);
}
#endif /* ROTA_TEST_MISSED */

/* ------------------------------------------------- the default report */

TEST(default_report_aborts_with_the_name)
{
    struct outcome *o = run(scenario_init_pending, false);
    char expected[200];
    snprintf(expected, sizeof expected, "rota: %s (timer %p)\n", INIT_PENDING,
             (void *)&b.timer);
    CAUGHT_BEGIN();
    CHECK_EQ_INT(o->signal, SIGABRT);
    CHECK(strstr(o->stderr_text, expected) != NULL);
    CHECK(!o->finished);
    CAUGHT_END();
}

TEST(debug_build_says_so)
{
    CAUGHT_BEGIN();
    CHECK(rota_debug_enabled());
    CAUGHT_END();
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(init_of_pending_timer),
        H_TEST(reused_memory_from_a_free_list),
        H_TEST(idle_timer_copied_by_assignment),
        H_TEST(pending_timer_moved_by_memcpy),
        H_TEST(pending_timer_freed_found_by_advance),
        H_TEST(pending_timer_freed_found_by_cancel),
#ifndef ROTA_TEST_MISSED
        H_TEST(init_after_wheel_unmapped),
        H_TEST(init_after_relocate_and_free),
#endif
        H_TEST(default_report_aborts_with_the_name),
        H_TEST(debug_build_says_so),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
