/* SPDX-License-Identifier: MIT */
/*
 * idle_uring.c - the idle server's io_uring loop (--loop uring).
 *
 * The same server as the epoll loop of idle_server.c (one worker thread per
 * listener, SO_REUSEPORT, a wheel per worker, kicks after --idle-timeout,
 * the same counters and kick-lateness histogram), with every accept, read
 * and echo going through the worker's ring instead of epoll_wait() and
 * read().  The wheel's one OS timer is a ring timeout (struct rota_uring,
 * rota/uring.h): a touch on every read is a store, no SQE.
 *
 * ONE OPERATION PER CONNECTION
 *   Each connection has exactly one request in flight: a recv into its own
 *   buffer, or the send that echoes what the recv brought (and its rest,
 *   when the peer's window takes less).  The next recv is queued only when
 *   the echo is done, so a peer that never reads cannot make the server
 *   buffer without bound, and the buffer is never shared between requests.
 *   The request's user_data is the connection; tags for the listener and
 *   the wake-up eventfd are distinct addresses, the adapter's are its own.
 *   The price is a buffer per connection (512 bytes: an echo of more comes
 *   back in pieces), where the epoll loop reads into one per worker; a
 *   ring of provided buffers (IORING_REGISTER_PBUF_RING, Linux 5.19) would
 *   share them, at the cost of a newer kernel than the rest of this loop
 *   needs.
 *
 * CLOSING WITH A REQUEST IN FLIGHT
 *   A pending recv holds its own reference to the socket, so close() alone
 *   would leave the connection open until the peer writes.  A kick queues a
 *   cancel of that request (an SQE: the kicks of a burst cost one
 *   io_uring_enter() together, where shutdown() would be a system call
 *   each) and closes the descriptor; the socket goes when the cancel is
 *   submitted at the end of the batch, and the connection's memory is
 *   reused only when the cancelled request's completion has come back.
 *
 * ORDER IN A BATCH
 *   The adapter's completions are handled after the I/O of the same batch
 *   (rota_uring_owns()), so a connection whose bytes came with the batch is
 *   touched before its timer is looked at, as in the epoll loop.
 *
 * The listener stays non-blocking (the EMFILE path accepts synchronously
 * from it); a kernel that answers an accept on it with -EAGAIN instead of
 * waiting gets a poll first.  Only the public API of rota is used.
 */
#define _GNU_SOURCE
#include <rota/uring.h> /* first: it includes liburing.h */

#include <rota.h>
#include <rota/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

#define RING_ENTRIES 4096
#define CONN_BUF 512 /* per connection: the echo's buffer */

enum ustate { U_RECV, U_SEND, U_CLOSED };

struct uconn {
    struct rota_timer idle;
    int fd;
    uint8_t state;
    uint8_t busy;      /* a request of this connection is in flight */
    uint32_t len, off; /* bytes in buf, bytes of them sent */
    struct uconn *next_free;
    char buf[CONN_BUF];
};

struct uchunk {
    struct uchunk *next;
    struct uconn conns[CONNS_PER_CHUNK];
};

struct uworker {
    struct rota_wheel wheel; /* first: recovered from the wheel pointer */
    struct rota_clock clock;
    struct rota_uring ut;
    struct io_uring ring;
    struct rota_timer resume; /* re-queues a paused accept */
    int id;
    int listen_fd;
    int wake_fd;
    int reserve_fd;      /* spare descriptor for EMFILE */
    bool accepting;      /* an accept (or its poll) is in flight */
    bool accept_is_poll; /* ... and it is the poll */
    bool paused;         /* out of descriptors: no accept queued */
    bool warned_timer;   /* said once that the timeout could not arm */
    char listen_tag, wake_tag, cancel_tag; /* user_data of those requests */
    uint64_t wake_value;
    struct uconn *free_list;
    struct uchunk *chunks;
    struct wstats st;
};

static struct uworker *uworker_of(struct rota_wheel *wheel)
{
    return rota_container_of(wheel, struct uworker, wheel);
}

/* An SQE, submitting what is queued when the submission queue is full. */
static struct io_uring_sqe *get_sqe(struct uworker *w)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    while (sqe == NULL) {
        if (io_uring_submit(&w->ring) < 0)
            die_sys("io_uring_submit");
        sqe = io_uring_get_sqe(&w->ring);
    }
    return sqe;
}

static void queue_recv(struct uworker *w, struct uconn *c)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    io_uring_prep_recv(sqe, c->fd, c->buf, CONN_BUF, 0);
    io_uring_sqe_set_data(sqe, c);
    c->state = U_RECV;
    c->busy = 1;
}

static void queue_send(struct uworker *w, struct uconn *c)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    io_uring_prep_send(sqe, c->fd, c->buf + c->off, c->len - c->off,
                       MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, c);
    c->state = U_SEND;
    c->busy = 1;
}

static void queue_accept(struct uworker *w, bool poll_first)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    if (poll_first)
        io_uring_prep_poll_add(sqe, w->listen_fd, POLLIN);
    else
        io_uring_prep_accept(sqe, w->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, &w->listen_tag);
    w->accepting = true;
    w->accept_is_poll = poll_first;
}

static void queue_wake_read(struct uworker *w)
{
    struct io_uring_sqe *sqe = get_sqe(w);
    io_uring_prep_read(sqe, w->wake_fd, &w->wake_value, sizeof w->wake_value,
                       0);
    io_uring_sqe_set_data(sqe, &w->wake_tag);
}

static struct uconn *uconn_alloc(struct uworker *w)
{
    if (w->free_list == NULL) {
        struct uchunk *ch = malloc(sizeof *ch);
        if (ch == NULL)
            return NULL;
        ch->next = w->chunks;
        w->chunks = ch;
        for (size_t i = CONNS_PER_CHUNK; i-- > 0;) {
            ch->conns[i].next_free = w->free_list;
            w->free_list = &ch->conns[i];
        }
    }
    struct uconn *c = w->free_list;
    w->free_list = c->next_free;
    c->busy = 0;
    c->len = c->off = 0;
    return c;
}

static void uconn_release(struct uworker *w, struct uconn *c)
{
    c->next_free = w->free_list;
    w->free_list = c;
}

static void resume_accepting(struct uworker *w)
{
    policy_reserve(&w->reserve_fd);
    if (w->paused && !w->accepting)
        queue_accept(w, false);
    w->paused = false;
}

/* Close the connection; its memory waits for the request in flight. */
static void uconn_close(struct uworker *w, struct uconn *c)
{
    if (rota_timer_cancel(&w->wheel, &c->idle) == 1)
        w->st.c.timer_ops++;
    if (c->busy) {
        /* The pending request holds the socket open: cancel it (an SQE, no
         * system call; the peer sees the close once it is submitted). */
        struct io_uring_sqe *sqe = get_sqe(w);
        io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)c, 0);
        io_uring_sqe_set_data(sqe, &w->cancel_tag);
    }
    close(c->fd);
    c->fd = -1;
    c->state = U_CLOSED;
    if (!c->busy)
        uconn_release(w, c);
    if (policy_closed(&w->wheel, &w->resume, &w->st))
        resume_accepting(w);
}

static void on_uidle(struct rota_wheel *wheel, struct rota_timer *timer,
                     uint64_t late)
{
    struct uworker *w = uworker_of(wheel);
    struct uconn *c = rota_container_of(timer, struct uconn, idle);

    (void)late;
    policy_kicked(&w->st, &w->clock, rota_timer_deadline(timer));
    uconn_close(w, c);
}

static void on_uresume(struct rota_wheel *wheel, struct rota_timer *timer,
                       uint64_t late)
{
    struct uworker *w = uworker_of(wheel);

    (void)timer;
    (void)late;
    w->st.c.timer_ops++;
    resume_accepting(w);
}

/* What to queue after a refusal. */
enum next_accept { ACCEPT_NOW, ACCEPT_AFTER_POLL, ACCEPT_PAUSED };

/* accept failed with EMFILE/ENFILE: refuse the connection at the head of
 * the backlog with the spare descriptor, or pause accepting for a moment.
 * An accept reports EMFILE before it looks at the backlog, so the backlog
 * may be empty: then wait for a connection (a poll), or the next accept
 * fails at once again, and again - a spinning worker. */
static enum next_accept urefuse_one(struct uworker *w)
{
    switch (policy_refuse(w->listen_fd, &w->reserve_fd, &w->st)) {
    case REFUSE_AGAIN:
        return ACCEPT_NOW;
    case REFUSE_EMPTY:
        return ACCEPT_AFTER_POLL;
    case REFUSE_PAUSE:
        break;
    }
    /* Stop accepting for a moment. */
    w->paused = true;
    policy_pause(&w->wheel, &w->clock, &w->resume, &w->st);
    return ACCEPT_PAUSED;
}

/* The listener's completion: an accepted descriptor, an error, or (after
 * an accept answered -EAGAIN) the readiness a poll waited for. */
static void on_listener(struct uworker *w, int res)
{
    bool was_poll = w->accept_is_poll;
    w->accepting = false;
    if (atomic_load_explicit(&stopping, memory_order_relaxed))
        return;
    if (was_poll) {
        if (!w->paused)
            queue_accept(w, false);
        return;
    }
    if (res < 0) {
        enum next_accept next = ACCEPT_NOW;
        if (res == -EAGAIN)
            next = ACCEPT_AFTER_POLL; /* wait for a connection, then accept */
        else if (res == -EMFILE || res == -ENFILE)
            next = urefuse_one(w);
        else if (res == -ENOBUFS || res == -ENOMEM)
            w->st.c.refused_mem++;
        if (next != ACCEPT_PAUSED)
            queue_accept(w, next == ACCEPT_AFTER_POLL);
        return;
    }
    int fd = res;
    queue_accept(w, false);
    if (!conn_admit(&w->st)) {
        close(fd);
        return;
    }
    struct uconn *c = uconn_alloc(w);
    if (c == NULL) {
        conn_leave();
        w->st.c.refused_mem++;
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    policy_idle_arm(&w->wheel, &w->clock, &c->idle, on_uidle);
    w->st.c.timer_ops++;
    w->st.c.open++;
    w->st.c.accepted++;
    queue_recv(w, c);
}

static void on_conn(struct uworker *w, struct uconn *c, int res)
{
    c->busy = 0;
    if (c->state == U_CLOSED) {
        uconn_release(w, c); /* its last request is back */
        return;
    }
    if (c->state == U_RECV) {
        if (res > 0) {
            /* The refresh: a store in the timer, no SQE, no system call. */
            policy_idle_touch(&w->wheel, &w->clock, &c->idle);
            w->st.c.reads++;
            w->st.c.timer_ops++;
            w->st.c.bytes += (uint64_t)res;
            c->len = (uint32_t)res;
            c->off = 0;
            queue_send(w, c);
            return;
        }
        if (res == -EINTR || res == -EAGAIN) {
            queue_recv(w, c);
            return;
        }
        w->st.c.peer_closed++; /* EOF, or an error such as ECONNRESET */
        uconn_close(w, c);
        return;
    }
    /* U_SEND */
    if (res < 0 && res != -EINTR && res != -EAGAIN) {
        w->st.c.peer_closed++;
        uconn_close(w, c);
        return;
    }
    if (res > 0)
        c->off += (uint32_t)res;
    if (c->off < c->len)
        queue_send(w, c);
    else
        queue_recv(w, c);
}

struct uworker *uworker_new(int id, int listen_fd)
{
    struct uworker *w = aligned_alloc(64, (sizeof *w + 63) / 64 * 64);
    if (w == NULL)
        die_sys("allocating a worker");
    memset(w, 0, sizeof *w);
    w->id = id;
    w->listen_fd = listen_fd;
    int rc = io_uring_queue_init(RING_ENTRIES, &w->ring, 0);
    if (rc < 0) {
        errno = -rc;
        die_sys("io_uring_queue_init (--loop uring needs io_uring)");
    }
    if (rota_clock_init(&w->clock, ROTA_CLOCK_MONOTONIC, cfg.tick_ns) != 0)
        die_sys("CLOCK_MONOTONIC");
    rota_wheel_init(&w->wheel, rota_clock_now(&w->clock));
    rota_timer_init(&w->resume, on_uresume);
    if (rota_uring_init(&w->ut, &w->ring, &w->wheel, &w->clock, 0) != 0) {
        errno = EINVAL;
        die_sys("rota_uring_init");
    }
    /* A storm of kicks gives way to I/O every FIRE_BUDGET closes. */
    rota_uring_set_budget(&w->ut, FIRE_BUDGET);
    if ((w->wake_fd = eventfd(0, EFD_CLOEXEC)) < 0)
        die_sys("eventfd");
    if ((w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        die_sys("/dev/null");
    queue_wake_read(w);
    queue_accept(w, false);
    return w;
}

struct wstats *uworker_stats(struct uworker *w)
{
    return &w->st;
}

int uworker_wake_fd(const struct uworker *w)
{
    return w->wake_fd;
}

static void publish(struct uworker *w)
{
    struct rota_loop_stats us;
    rota_uring_stats(&w->ut, &us);
    w->st.c.timer_sqes = us.sqes;
    wstats_publish(&w->st);
}

static void close_at_exit(struct rota_timer *timer, void *arg)
{
    struct uworker *w = arg;
    if (timer != &w->resume)
        uconn_close(w, rota_container_of(timer, struct uconn, idle));
}

/* The most adapter completions one batch can hold: its timeout, the old one
 * a remove cancelled, and the remove's or update's own. */
#define OWN_MAX 8

void *uworker_main(void *arg)
{
    struct uworker *w = arg;

    while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
        if (rota_uring_sync(&w->ut) < 0 && !w->warned_timer) {
            fprintf(stderr,
                    "rota-idle-server: worker %d: cannot arm the ring timeout: "
                    "%s\n",
                    w->id, strerror(errno));
            w->warned_timer = true;
        }
        int rc = io_uring_submit_and_wait(&w->ring, 1);
        if (rc < 0 && rc != -EINTR && rc != -EBUSY) {
            errno = -rc;
            fprintf(stderr,
                    "rota-idle-server: worker %d: io_uring_submit: %s\n", w->id,
                    strerror(errno));
            break;
        }
        /* Copies of the adapter's completions, handled after the I/O. */
        struct {
            uint64_t user_data;
            int32_t res;
            uint32_t flags;
        } own[OWN_MAX];
        unsigned nown = 0, head, n = 0;
        struct io_uring_cqe *cqe;
        io_uring_for_each_cqe(&w->ring, head, cqe)
        {
            n++;
            void *tag = io_uring_cqe_get_data(cqe);
            if (rota_uring_owns(&w->ut, cqe)) {
                if (nown < OWN_MAX) {
                    own[nown].user_data = cqe->user_data;
                    own[nown].res = cqe->res;
                    own[nown++].flags = cqe->flags;
                } else {
                    rota_uring_handle(&w->ut, cqe);
                }
            } else if (tag == &w->listen_tag) {
                on_listener(w, cqe->res);
            } else if (tag == &w->wake_tag || tag == &w->cancel_tag) {
                /* Stop (the loop checks), or a cancel's own result. */
            } else {
                on_conn(w, tag, cqe->res);
            }
        }
        io_uring_cq_advance(&w->ring, n);
        for (unsigned i = 0; i < nown; i++) {
            struct io_uring_cqe copy = {.user_data = own[i].user_data,
                                        .res = own[i].res,
                                        .flags = own[i].flags};
            rota_uring_handle(&w->ut, &copy);
        }
        publish(w);
    }

    /* Close everything, cleanly; destroying the ring cancels what is still
     * in flight, the adapter's timeout included. */
    rota_wheel_drain(&w->wheel, close_at_exit, w);
    rota_uring_close(&w->ut);
    publish(w);
    return NULL;
}

void uworker_free(struct uworker *w)
{
    io_uring_queue_exit(&w->ring);
    while (w->chunks != NULL) {
        struct uchunk *next = w->chunks->next;
        free(w->chunks);
        w->chunks = next;
    }
    close(w->listen_fd);
    close(w->wake_fd);
    if (w->reserve_fd >= 0)
        close(w->reserve_fd);
    free(w);
}
