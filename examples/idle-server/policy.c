/* SPDX-License-Identifier: MIT */
/*
 * policy.c - the idle server's connection policy, in one place for both of
 * its event loops (the epoll worker in idle_server.c, the io_uring worker
 * in idle_uring.c).  A driver owns its sockets and its I/O; what happens to
 * a connection's idle timer and to the listener is decided here:
 *
 *   - A connection is admitted under --max-conns (conn_admit(), server.h)
 *     and its idle timer armed --idle-timeout ahead (policy_idle_arm()).
 *   - Data that arrives moves the timer later (policy_idle_touch()): the
 *     clock is read after the data arrived, so a kick is never early, and
 *     a later deadline is a store in the timer, not a move.
 *   - A timer that fires kicks the connection: the driver closes it, and
 *     policy_kicked() records how long after its deadline the kick ran.
 *   - A close cancels the timer (policy_closed()), gives back the place
 *     under --max-conns, and says whether a listener paused for lack of
 *     descriptors should resume now: a descriptor was just freed, and
 *     clients wait in the backlog for no reason meanwhile.
 *   - accept() failing with EMFILE or ENFILE: the worker's spare descriptor
 *     refuses the connection at the head of the backlog
 *     (policy_refuse(): the client sees a refusal, not a hang), or, when
 *     even that fails, the listener pauses for PAUSE_NS at most
 *     (policy_pause()), so a level-triggered listener cannot spin a core.
 */
#define _GNU_SOURCE
#include <rota.h>
#include <rota/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

void policy_idle_arm(struct rota_wheel *wheel, struct rota_clock *clock,
                     struct rota_timer *idle, rota_timer_fn *on_idle)
{
    rota_timer_init(idle, on_idle);
    rota_timer_arm_at(wheel, idle,
                      rota_clock_deadline_after(clock, cfg.idle_ns));
}

void policy_idle_touch(struct rota_wheel *wheel, struct rota_clock *clock,
                       struct rota_timer *idle)
{
    uint64_t deadline = rota_clock_deadline_after(clock, cfg.idle_ns);
    if (rota_timer_touch_at(wheel, idle, deadline) != 0)
        rota_timer_arm_at(wheel, idle, deadline);
}

void policy_kicked(struct wstats *st, struct rota_clock *clock,
                   uint64_t deadline)
{
    /* The deadline was rounded up to a tick when it was set: this is the
     * loop's lateness, not the tick's. */
    wstats_kick(st, rota_clock_ns(clock, deadline), rota_clock_now_ns(clock));
    st->c.timer_ops++;
}

bool policy_closed(struct rota_wheel *wheel, struct rota_timer *resume,
                   struct wstats *st)
{
    st->c.open--;
    conn_leave();
    if (rota_timer_cancel(wheel, resume) != 1)
        return false;
    st->c.timer_ops++;
    return true;
}

void policy_reserve(int *reserve_fd)
{
    if (*reserve_fd < 0)
        *reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

enum refusal policy_refuse(int listen_fd, int *reserve_fd, struct wstats *st)
{
    if (*reserve_fd < 0)
        return REFUSE_PAUSE;
    close(*reserve_fd);
    *reserve_fd = -1;
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    int err = errno;
    if (fd >= 0) {
        close(fd);
        st->c.refused_fd++;
    }
    *reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (*reserve_fd >= 0)
        return fd >= 0 ? REFUSE_AGAIN : REFUSE_EMPTY;
    /* accept() reports EMFILE before it looks at the backlog, so the
     * backlog may have been empty; an error other than running out means
     * there is nothing to refuse. */
    if (fd < 0 && err != EMFILE && err != ENFILE)
        return REFUSE_EMPTY;
    /* Another thread took the freed slot. */
    return REFUSE_PAUSE;
}

void policy_pause(struct rota_wheel *wheel, struct rota_clock *clock,
                  struct rota_timer *resume, struct wstats *st)
{
    st->c.paused++;
    rota_timer_arm_at(wheel, resume,
                      rota_clock_deadline_after(clock, PAUSE_NS));
    st->c.timer_ops++;
}
