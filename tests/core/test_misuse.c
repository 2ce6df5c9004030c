/* SPDX-License-Identifier: MIT */
/*
 * test_misuse.c - the wheel's rules broken (rota.h, THE WHEEL'S RULES) as
 * C programs break them, each in a child process with a time limit:
 *
 *   freed_timer_reused        a pending timer's object freed without
 *                             rota_timer_cancel(), its memory handed to a
 *                             new object whose own timer sits elsewhere in
 *                             the block, initialised and armed
 *   freed_block_reused_in_place  the same, the new object's timer at the
 *                             old one's offset, not the block's start: its
 *                             header written, its timer initialised
 *   wheel_from_two_threads    a second thread cancels and re-arms timers
 *                             while the owner advances
 *   timer_call_in_another_threads_pass, pass_in_another_threads_pass
 *                             a second thread arms a timer, or advances,
 *                             while the owner's pass waits in a callback
 *   wheel_initialised_again   rota_wheel_init() of a wheel with pending
 *                             timers, which are then cancelled and fired
 *   wheel_copied              a struct copy of a wheel with pending timers,
 *                             used in place of the original
 *
 * Built twice (tests/CMakeLists.txt):
 *   test_misuse        against a normal build of the core: no misuse may
 *                      hang it.  The child may end, crash or abort (a
 *                      report of a corrupt wheel, which names the misuses),
 *                      never run into its alarm.  (Before the walks were
 *                      bounded, freed_timer_reused spun for ever.)
 *   test_misuse_debug  against a debug build (ROTA_TEST_DEBUG): the first
 *                      report names the misuse (for the free-running two
 *                      threads: the overlap, or the damage it left).
 *
 * The memory "freed" is a static pool overwritten in place, as an allocator
 * reuses it, so ASan and valgrind see no invalid access.
 */
#define _DEFAULT_SOURCE /* fork, mmap MAP_ANONYMOUS, pipe, alarm */
#include <rota.h>

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* rota.h: what a debug build says, and every build for a corrupt wheel. */
#define INIT_PENDING "rota_timer_init() of a pending timer"
#define THREADS "wheel used from two threads at once"
#define WHEEL_REINIT "rota_wheel_init() of a wheel with pending timers"
#define WHEEL_COPIED "wheel moved or copied after rota_wheel_init()"
#define CORRUPT "the wheel's lists are corrupt"

/* How long a child may run: ten times what the slowest case takes under
 * valgrind. */
#define CHILD_SECONDS 60

struct outcome {
    int reports;
    char misuse[240]; /* the first report */
    const void *address;
    int finished; /* the scenario ran to its end */
    int signal;   /* the child died of this signal */
};

static struct outcome *out;
static jmp_buf out_of_rota;

static void on_misuse(const char *misuse, const struct rota_timer *timer,
                      void *arg)
{
    (void)arg;
    if (out->reports++ == 0) {
        snprintf(out->misuse, sizeof out->misuse, "%s", misuse);
        out->address = timer;
    }
    /* Out of the library: the wheel is not used again (rota.h).  From the
     * main thread only; another thread's report just ends that thread's
     * work (the scenario checks out->reports). */
    if (pthread_equal(pthread_self(), *(pthread_t *)arg))
        longjmp(out_of_rota, 1);
}

static struct outcome *run(void (*scenario)(void))
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
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(1);
    }
    if (pid == 0) {
        static pthread_t main_thread;
        main_thread = pthread_self();
        alarm(CHILD_SECONDS); /* a hang ends as SIGALRM */
        rota_debug_set_handler(on_misuse, &main_thread);
        if (setjmp(out_of_rota) == 0) {
            scenario();
            out->finished = 1;
        }
        _exit(0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        ;
    if (WIFSIGNALED(status))
        shared->signal = WTERMSIG(status);
    return shared;
}

/* Whether the first report starts with `name`. */
static bool reported(const struct outcome *o, const char *name)
{
    return o->reports > 0 && strncmp(o->misuse, name, strlen(name)) == 0;
}

#ifndef ROTA_TEST_DEBUG
/* A normal build: the child ended in time, whatever else happened; and a
 * report it made is the corrupt wheel's, naming the three misuses. */
static void check_ended(const struct outcome *o)
{
    CHECK(o->signal != SIGALRM);
    if (o->reports > 0) {
        CHECK(reported(o, CORRUPT));
        CHECK(strstr(o->misuse, "freed") != NULL);
        CHECK(strstr(o->misuse, "two threads") != NULL);
        CHECK(strstr(o->misuse, "copied") != NULL);
    }
    printf("     the child %s\n", o->signal != 0 ? strsignal(o->signal)
                                  : o->finished  ? "finished"
                                                 : "jumped out of a report");
}
#endif

/* ------------------------------------------------------------ objects */

static void fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w, (void)t, (void)late;
}

/* A connection as a server holds it: its timer not at the start. */
struct conn {
    char header[48];
    struct rota_timer timer;
    int fd;
};

/* Another object, with its timer at another offset. */
struct request {
    char header[16];
    struct rota_timer timer;
    char body[64];
};

#define CONNS 8
static union block {
    struct conn conn;
    struct request request;
} pool[CONNS];
static struct rota_wheel wheel;

static void conns_pending(uint64_t deadline)
{
    rota_wheel_init(&wheel, 0);
    for (int i = 0; i < CONNS; i++) {
        rota_timer_init(&pool[i].conn.timer, fire);
        rota_timer_arm_at(&wheel, &pool[i].conn.timer, deadline);
    }
}

/* --------------------------------------------- a pending timer freed */

static void scenario_freed_reused(void)
{
    conns_pending(100);
    /* conn 3 is freed while its timer is armed; the allocator hands the
     * block to a request, which writes its header and its own timer (at
     * another offset, over part of the old one) and arms it. */
    struct request *r = &pool[3].request;
    memset(r, 0, sizeof *r);
    rota_timer_init(&r->timer, fire);
    rota_timer_arm_at(&wheel, &r->timer, 300);
    rota_wheel_advance(&wheel, 200);
    rota_wheel_advance(&wheel, 400);
}

TEST(freed_timer_reused)
{
    struct outcome *o = run(scenario_freed_reused);
#ifdef ROTA_TEST_DEBUG
    /* The walk finds the list broken at the freed timer's neighbour. */
    CHECK(reported(o, "a neighbour of this pending timer was freed") ||
          reported(o, "pending timer freed"));
    CHECK(!o->finished);
#else
    check_ended(o);
#endif
}

static void scenario_reused_in_place(void)
{
    conns_pending(100);
    /* The block goes to a new connection: the allocator's own words at
     * the start, then the object's constructor, which initialises its
     * timer (at the offset of the old one, whose bytes are still there)
     * and arms it. */
    struct conn *c = &pool[3].conn;
    memset(c->header, 0x6b, sizeof c->header);
    rota_timer_init(&c->timer, fire);
    rota_timer_arm_at(&wheel, &c->timer, 300);
    rota_wheel_advance(&wheel, 200);
    rota_wheel_advance(&wheel, 400);
}

TEST(freed_block_reused_in_place)
{
    struct outcome *o = run(scenario_reused_in_place);
#ifdef ROTA_TEST_DEBUG
    CHECK(reported(o, INIT_PENDING));
    CHECK_EQ_PTR(o->address, &pool[3].conn.timer);
#else
    check_ended(o);
#endif
}

/* ------------------------------------------------------ two threads */

#define SHARED_TIMERS 1000
static struct rota_timer shared_timers[SHARED_TIMERS];
static atomic_int stop;
static atomic_int started;

static void *second_thread(void *arg)
{
    uint64_t x = 12345;
    (void)arg;
    atomic_store(&started, 1);
    while (!atomic_load(&stop) && out->reports == 0) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        struct rota_timer *t = &shared_timers[(x >> 33) % SHARED_TIMERS];
        rota_timer_cancel(&wheel, t);
        rota_timer_arm_in(&wheel, t, 1 + (x >> 40) % 64);
    }
    return NULL;
}

static void rearm(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)late;
    rota_timer_arm_in(w, t, 1 + (uint64_t)(t - shared_timers) % 64);
}

static void scenario_two_threads(void)
{
    rota_wheel_init(&wheel, 0);
    for (int i = 0; i < SHARED_TIMERS; i++) {
        rota_timer_init(&shared_timers[i], rearm);
        rota_timer_arm_in(&wheel, &shared_timers[i], 1 + (uint64_t)i % 64);
    }
    pthread_t th;
    if (pthread_create(&th, NULL, second_thread, NULL) != 0)
        return;
    /* The overlap needs both threads running: a short run could end before
     * the second thread is first scheduled. */
    while (!atomic_load(&started))
        sched_yield();
#ifdef ROTA_TEST_DEBUG
    /* Until a report, within half the child's alarm: when the two threads
     * first overlap is the scheduler's choice. */
    time_t until = time(NULL) + CHILD_SECONDS / 2;
    for (uint64_t now = 1; out->reports == 0 && time(NULL) < until; now++)
        rota_wheel_advance(&wheel, now);
#else
    uint64_t ticks = h_small() ? 20000 : 200000;
    for (uint64_t now = 1; now < ticks && out->reports == 0; now++)
        rota_wheel_advance(&wheel, now);
#endif
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
}

#ifdef ROTA_TEST_DEBUG
/* Whether `p` is one of the shared timers. */
static bool shared_timer(const void *p)
{
    const char *c = p;
    return c >= (const char *)shared_timers &&
           c < (const char *)(shared_timers + SHARED_TIMERS);
}

/* Whether `p` is the wheel or inside it (a slot's list head, which the
 * damage check may name as the timer whose neighbour broke). */
static bool in_wheel(const void *p)
{
    const char *c = p;
    return c >= (const char *)&wheel && c < (const char *)(&wheel + 1);
}
#endif

TEST(wheel_from_two_threads)
{
    struct outcome *o = run(scenario_two_threads);
#ifdef ROTA_TEST_DEBUG
    /* Seen as the overlap, or, when both calls began before either could
     * see the other (the check is not a lock), as the damage the overlap
     * left in the wheel or a timer's list (rota.h, DEBUG BUILDS), under
     * whichever misuse that damage resembles.  Never silence, and always
     * about this wheel or its timers. */
    CHECK(o->reports > 0);
    if (reported(o, THREADS))
        CHECK_EQ_PTR(o->address, (const void *)&wheel);
    else
        CHECK(in_wheel(o->address) || shared_timer(o->address));
#else
    check_ended(o);
#endif
}

/*
 * The same misuse without the scheduler's say: a callback of the owner's
 * pass waits while a second thread makes one call on the wheel, a timer
 * call (arm) or a pass (advance).  Each is inside the owner's pass, so the
 * debug build names it every time.
 */
static struct rota_timer meeting, intruder;
static atomic_int phase; /* 1: the owner waits in a callback; 2: called */
static bool intrude_with_pass;

static void wait_for_intruder(struct rota_wheel *w, struct rota_timer *t,
                              uint64_t late)
{
    (void)w, (void)t, (void)late;
    atomic_store(&phase, 1);
    while (atomic_load(&phase) != 2)
        sched_yield();
}

static void ignore(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w, (void)t, (void)late;
}

static void *intruder_thread(void *arg)
{
    (void)arg;
    while (atomic_load(&phase) != 1)
        sched_yield();
    if (intrude_with_pass)
        rota_wheel_advance(&wheel, 2);
    else
        rota_timer_arm_in(&wheel, &intruder, 5);
    atomic_store(&phase, 2);
    return NULL;
}

static void scenario_call_in_a_pass(void)
{
    rota_wheel_init(&wheel, 0);
    rota_timer_init(&meeting, wait_for_intruder);
    rota_timer_init(&intruder, ignore);
    rota_timer_arm_at(&wheel, &meeting, 1);
    atomic_store(&phase, 0);
    pthread_t th;
    if (pthread_create(&th, NULL, intruder_thread, NULL) != 0)
        return;
    rota_wheel_advance(&wheel, 1);
    pthread_join(th, NULL);
}

static void check_call_in_a_pass(bool pass)
{
    intrude_with_pass = pass;
    struct outcome *o = run(scenario_call_in_a_pass);
#ifdef ROTA_TEST_DEBUG
    CHECK_EQ_INT(o->reports, 1);
    CHECK(reported(o, THREADS));
    CHECK_EQ_PTR(o->address, (const void *)&wheel);
    CHECK(o->finished); /* the second thread's call returned an error */
#else
    check_ended(o);
#endif
}

TEST(timer_call_in_another_threads_pass)
{
    check_call_in_a_pass(false);
}

TEST(pass_in_another_threads_pass)
{
    check_call_in_a_pass(true);
}

/* ------------------------------------------------- init again, copy */

static void scenario_init_again(void)
{
    conns_pending(100);
    /* A "reset" of a wheel whose timers are still armed. */
    int rc = rota_wheel_init(&wheel, 0);
    (void)rc;
    rota_timer_cancel(&wheel, &pool[2].conn.timer);
    rota_timer_arm_at(&wheel, &pool[5].conn.timer, 50);
    rota_timer_init(&pool[6].conn.timer, fire);
    rota_timer_arm_at(&wheel, &pool[6].conn.timer, 100);
    rota_wheel_advance(&wheel, 200);
    rota_wheel_next_deadline(&wheel);
    rota_wheel_advance(&wheel, 400);
}

TEST(wheel_initialised_again)
{
    struct outcome *o = run(scenario_init_again);
#ifdef ROTA_TEST_DEBUG
    CHECK(reported(o, WHEEL_REINIT));
    CHECK_EQ_PTR(o->address, (const void *)&wheel);
#else
    check_ended(o);
#endif
}

static struct rota_wheel copy;

static void scenario_copied(void)
{
    conns_pending(100);
    copy = wheel; /* say, a struct holding the wheel returned by value */
    rota_timer_cancel(&copy, &pool[2].conn.timer);
    rota_timer_arm_at(&copy, &pool[5].conn.timer, 50);
    rota_wheel_advance(&copy, 200);
    rota_wheel_next_deadline(&copy);
    rota_wheel_advance(&copy, 400);
}

TEST(wheel_copied)
{
    struct outcome *o = run(scenario_copied);
#ifdef ROTA_TEST_DEBUG
    CHECK(reported(o, WHEEL_COPIED));
    CHECK_EQ_PTR(o->address, (const void *)&copy);
#else
    check_ended(o);
#endif
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(freed_timer_reused),
        H_TEST(freed_block_reused_in_place),
        H_TEST(wheel_from_two_threads),
        H_TEST(timer_call_in_another_threads_pass),
        H_TEST(pass_in_another_threads_pass),
        H_TEST(wheel_initialised_again),
        H_TEST(wheel_copied),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
