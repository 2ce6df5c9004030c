/* SPDX-License-Identifier: MIT */
/*
 * rota-idle-loadgen: open many connections to a rota-idle-server on loopback, keep a
 * fraction of them chatty, leave the rest silent, and report how long after
 * its last write the server closed each silent one.
 *
 * Connections are opened at most --concurrency at a time.  Each one writes
 * one byte as soon as it is connected (so the server has seen it); a chatty
 * one then writes one byte every --interval on a fixed schedule (a periodic
 * rota timer: no drift), a silent one writes nothing more.  The run lasts
 * --duration once every connection is up (or until none is left).  A close
 * is timed at the moment epoll_wait() returned with it, and a write at the
 * moment just before write() was called, so the delay reported is never
 * shorter than the server's real one.
 *
 * With --processes P the connections are split over P child processes (the
 * descriptor limit is per process); with --sources S they are spread over S
 * source addresses 127.0.0.1, 127.0.0.2, ... (one address gives about 28,000
 * ports towards one server port).  The program only ever connects to
 * 127.0.0.0/8.
 *
 * Exit status: 0, or 1 when a check given on the command line failed
 * (--expect-min / --expect-max, a chatty connection closed, a connect that
 * failed), 2 for bad usage.
 */
#define _GNU_SOURCE
#include <rota.h>
#include <rota/clock.h>
#include <rota/epoll.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#define MAX_PROCS 64
#define TICK_NS 1000000u /* the load generator's wheel: 1 ms */
/* Give up connecting after 30 s, or twice what --rate needs. */
static uint64_t connect_phase_ns = 30000000000ull;

struct options {
    struct sockaddr_in server;
    long connections;
    double chatty;
    uint64_t interval_ns;
    uint64_t duration_ns;
    uint64_t idle_ns; /* the server's, to print lateness; 0: unknown */
    uint64_t expect_min_ns, expect_max_ns;
    bool has_min, has_max;
    long processes;
    long sources;
    long concurrency;
    double rate; /* connects per second, all processes together; 0: no cap */
    const char *report;
    bool quiet;
};

static struct options opt;

enum { C_IDLE, C_CONNECTING, C_OPEN, C_DONE };

struct lconn {
    struct rota_periodic tick; /* chatty writes */
    uint64_t last_write_ns;
    uint64_t closed_ns; /* when the server's close was seen; 0: not */
    int fd;
    uint32_t index; /* global connection number */
    uint8_t state;
    uint8_t chatty;
    uint8_t failed; /* connect failed */
};

/* What a child sends its parent: the counts, then one int64 per silent
 * connection: the close delay in ns, or -1 if the server never closed it. */
struct summary {
    uint64_t chatty, silent, failed, chatty_closed, writes, echoed;
    uint64_t first_error; /* errno of the first connect failure */
};

struct proc {
    struct rota_wheel wheel;
    struct rota_clock clock;
    struct rota_epoll et; /* the wheel's one OS timer: the epoll timeout */
    int ep;
    struct lconn *c;
    long n;
    long next_to_connect;
    long connecting;
    long open;
    struct summary sum;
};

/* ------------------------------------------------------------ one process */

static void on_chatty(struct rota_wheel *wheel, struct rota_timer *timer,
                      uint64_t late)
{
    struct lconn *c = rota_container_of(timer, struct lconn, tick.timer);
    struct proc *p = rota_container_of(wheel, struct proc, wheel);

    (void)late;
    c->last_write_ns = cli_mono_ns();
    if (write(c->fd, "x", 1) == 1)
        p->sum.writes++;
}

static void finish(struct proc *p, struct lconn *c, uint64_t when)
{
    rota_timer_cancel(&p->wheel, &c->tick.timer);
    close(c->fd);
    c->fd = -1;
    if (c->state == C_OPEN)
        p->open--;
    else if (c->state == C_CONNECTING)
        p->connecting--;
    c->state = C_DONE;
    c->closed_ns = when;
}

static void connected(struct proc *p, struct lconn *c)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(p->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->state = C_OPEN;
    p->connecting--;
    p->open++;
    c->last_write_ns = cli_mono_ns();
    if (write(c->fd, "h", 1) == 1)
        p->sum.writes++;
    if (c->chatty) {
        uint64_t period = opt.interval_ns / TICK_NS;
        if (period == 0)
            period = 1;
        rota_periodic_arm_at(
            &p->wheel, &c->tick,
            rota_clock_deadline_after(&p->clock, opt.interval_ns), period,
            ROTA_MISSED_BURST); /* a late wake-up catches up: exact rate */
    }
}

static void connect_failed(struct proc *p, struct lconn *c, int err)
{
    if (p->sum.failed++ == 0)
        p->sum.first_error = (uint64_t)err;
    c->failed = 1;
    finish(p, c, 0);
}

static void start_connect(struct proc *p, struct lconn *c)
{
    c->state = C_CONNECTING;
    p->connecting++;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        connect_failed(p, c, errno);
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (opt.sources > 1) {
        /* Spread over 127.0.0.1 + k; the port is chosen at connect() time
         * per destination, so each address has its whole port range. */
        struct sockaddr_in src = {.sin_family = AF_INET};
        src.sin_addr.s_addr =
            htonl(0x7f000001u + (uint32_t)(c->index % (uint32_t)opt.sources));
        setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one,
                   sizeof one);
        if (bind(c->fd, (struct sockaddr *)&src, sizeof src) != 0) {
            connect_failed(p, c, errno);
            return;
        }
    }
    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(p->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        connect_failed(p, c, errno);
        return;
    }
    if (connect(c->fd, (struct sockaddr *)&opt.server, sizeof opt.server) ==
        0) {
        connected(p, c);
        return;
    }
    if (errno != EINPROGRESS)
        connect_failed(p, c, errno);
}

static void on_event(struct proc *p, struct lconn *c, uint32_t events,
                     uint64_t woke_ns)
{
    if (c->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0)
            connect_failed(p, c, err);
        else
            connected(p, c);
        return;
    }
    if (c->state != C_OPEN)
        return;
    (void)events;
    char buf[4096];
    ssize_t n = read(c->fd, buf, sizeof buf);
    if (n > 0) {
        p->sum.echoed += (uint64_t)n;
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    /* EOF or reset: the server closed it. */
    if (c->chatty)
        p->sum.chatty_closed++;
    finish(p, c, woke_ns);
}

static void run_share(long first, long count, int out_fd)
{
    struct proc *p = calloc(1, sizeof *p);
    if (p == NULL)
        exit(1);
    p->n = count;
    p->c = calloc((size_t)(count > 0 ? count : 1), sizeof *p->c);
    if (p->c == NULL) {
        fprintf(stderr, "rota-idle-loadgen: out of memory\n");
        exit(1);
    }
    rota_clock_init(&p->clock, ROTA_CLOCK_MONOTONIC, TICK_NS);
    rota_wheel_init(&p->wheel, rota_clock_now(&p->clock));
    rota_epoll_init(&p->et, &p->wheel, &p->clock, 0);
    p->ep = epoll_create1(EPOLL_CLOEXEC);
    if (p->ep < 0) {
        perror("rota-idle-loadgen: epoll_create1");
        exit(1);
    }
    /* The first round(connections * chatty) connections, counted globally,
     * are chatty; spread them evenly so every process gets its share. */
    long chatty_total = (long)((double)opt.connections * opt.chatty + 0.5);
    for (long i = 0; i < count; i++) {
        struct lconn *c = &p->c[i];
        c->index = (uint32_t)(first + i);
        c->fd = -1;
        c->chatty = chatty_total > 0 &&
                    (first + i) * chatty_total / opt.connections !=
                        (first + i + 1) * chatty_total / opt.connections;
        rota_periodic_init(&c->tick, on_chatty);
        if (c->chatty)
            p->sum.chatty++;
        else
            p->sum.silent++;
    }

    uint64_t start = cli_mono_ns();
    uint64_t end = 0; /* set once everything is connected */
    double rate = opt.rate / (double)opt.processes; /* this process's share */
    struct epoll_event evs[256];
    for (;;) {
        long allowed = p->n;
        if (rate > 0) {
            double due = (double)(cli_mono_ns() - start) / 1e9 * rate + 1;
            if (due < (double)p->n)
                allowed = (long)due;
        }
        while (p->connecting < opt.concurrency && p->next_to_connect < allowed)
            start_connect(p, &p->c[p->next_to_connect++]);
        uint64_t now = cli_mono_ns();
        if (end == 0 && p->next_to_connect == p->n && p->connecting == 0) {
            end = now + opt.duration_ns;
            if (!opt.quiet)
                fprintf(stderr,
                        "rota-idle-loadgen[%d]: %ld connected in %.2fs\n",
                        (int)getpid(), p->open, (double)(now - start) / 1e9);
        }
        if (end != 0 && (now >= end || p->open == 0))
            break;
        if (end == 0 && now - start > connect_phase_ns) {
            fprintf(stderr,
                    "rota-idle-loadgen: connecting took longer than %.0fs\n",
                    (double)connect_phase_ns / 1e9);
            break;
        }
        int timeout;
        rota_epoll_wait_ms(&p->et, &timeout); /* 0 on an error: polls */
        uint64_t left_ms =
            ((end != 0 ? end : start + connect_phase_ns) - now + 999999u) /
            1000000u;
        if (timeout < 0 || (uint64_t)timeout > left_ms)
            timeout = (int)left_ms;
        if (rate > 0 && p->next_to_connect < p->n && timeout > 1)
            timeout = 1; /* paced connects: look again soon */
        int n = epoll_wait(p->ep, evs, 256, timeout);
        uint64_t woke = cli_mono_ns();
        for (int i = 0; i < n; i++)
            on_event(p, evs[i].data.ptr, evs[i].events, woke);
        rota_epoll_dispatch(&p->et); /* the chatty writes that are due */
    }

    /* Report, then close what is left (the chatty ones, normally). */
    if (write(out_fd, &p->sum, sizeof p->sum) != (ssize_t)sizeof p->sum)
        exit(1);
    for (long i = 0; i < count; i++) {
        struct lconn *c = &p->c[i];
        if (c->chatty)
            continue;
        int64_t d = -1;
        if (c->failed)
            d = -2;
        else if (c->closed_ns != 0)
            d = (int64_t)(c->closed_ns - c->last_write_ns);
        if (write(out_fd, &d, sizeof d) != (ssize_t)sizeof d)
            exit(1);
    }
    for (long i = 0; i < count; i++)
        if (p->c[i].fd >= 0)
            finish(p, &p->c[i], 0);
    close(p->ep);
    free(p->c);
    free(p);
}

/* ----------------------------------------------------------------- parent */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double pct_ms(const int64_t *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return (double)v[i] / 1e6;
}

static void usage(FILE *to)
{
    fprintf(
        to,
        "usage: rota-idle-loadgen --port N [options]\n"
        "Open connections to a rota-idle-server on loopback; report when the "
        "silent ones are closed.\n"
        "\n"
        "  --host ADDR         server address, in 127.0.0.0/8 (default "
        "127.0.0.1)\n"
        "  --port N            server port (required)\n"
        "  --connections N     connections to open (default 1000)\n"
        "  --chatty F          fraction that write every --interval "
        "(default 0.1)\n"
        "  --interval T        chatty write interval (default 1s)\n"
        "  --duration T        run time once all are connected (default "
        "10s)\n"
        "  --idle-timeout T    the server's idle timeout, to report "
        "lateness\n"
        "  --expect-min T      fail if a silent connection is closed "
        "sooner than T after its last write\n"
        "  --expect-max T      fail if one is closed later, or not at "
        "all\n"
        "  --processes P       split the connections over P processes "
        "(default 1)\n"
        "  --sources S         spread them over S source addresses "
        "127.0.0.1.. (default: 1 per 25000)\n"
        "  --concurrency N     connects in flight per process (default "
        "256)\n"
        "  --rate N            at most N connects per second in all "
        "(default: no cap)\n"
        "  --report FILE       one line per silent connection: index and "
        "close delay in ms\n"
        "  --quiet             only the summary\n"
        "  --help              this text\n"
        "\n"
        "Durations take a unit: ns, us, ms, s (the default) or m.\n");
}

static void parse_args(int argc, char **argv)
{
    const char *host = "127.0.0.1";
    long port = -1;

    opt.connections = 1000;
    opt.chatty = 0.1;
    opt.interval_ns = 1000000000u;
    opt.duration_ns = 10000000000u;
    opt.processes = 1;
    opt.sources = 0;
    opt.concurrency = 256;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--host") == 0) {
            host = cli_value(argc, argv, &i);
        } else if (strcmp(a, "--port") == 0) {
            port = cli_long(a, cli_value(argc, argv, &i), 1, 65535);
        } else if (strcmp(a, "--connections") == 0) {
            opt.connections =
                cli_long(a, cli_value(argc, argv, &i), 1, 10000000);
        } else if (strcmp(a, "--chatty") == 0) {
            opt.chatty = cli_fraction(a, cli_value(argc, argv, &i));
        } else if (strcmp(a, "--interval") == 0) {
            opt.interval_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
            if (opt.interval_ns < TICK_NS)
                cli_die("--interval: must be at least 1ms");
        } else if (strcmp(a, "--duration") == 0) {
            opt.duration_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
        } else if (strcmp(a, "--idle-timeout") == 0) {
            opt.idle_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
        } else if (strcmp(a, "--expect-min") == 0) {
            opt.expect_min_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
            opt.has_min = true;
        } else if (strcmp(a, "--expect-max") == 0) {
            opt.expect_max_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
            opt.has_max = true;
        } else if (strcmp(a, "--processes") == 0) {
            opt.processes =
                cli_long(a, cli_value(argc, argv, &i), 1, MAX_PROCS);
        } else if (strcmp(a, "--sources") == 0) {
            opt.sources = cli_long(a, cli_value(argc, argv, &i), 1, 65536);
        } else if (strcmp(a, "--concurrency") == 0) {
            opt.concurrency = cli_long(a, cli_value(argc, argv, &i), 1, 65536);
        } else if (strcmp(a, "--rate") == 0) {
            opt.rate =
                (double)cli_long(a, cli_value(argc, argv, &i), 1, 10000000);
        } else if (strcmp(a, "--report") == 0) {
            opt.report = cli_value(argc, argv, &i);
        } else if (strcmp(a, "--quiet") == 0) {
            opt.quiet = true;
        } else if (a[0] == '-') {
            cli_die("unknown option '%s'", a);
        } else {
            cli_die("unexpected argument '%s'", a);
        }
    }
    if (port < 0)
        cli_die("--port is required");
    opt.server.sin_family = AF_INET;
    opt.server.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &opt.server.sin_addr) != 1)
        cli_die("--host: '%s' is not an IPv4 address", host);
    if ((ntohl(opt.server.sin_addr.s_addr) >> 24) != 127)
        cli_die("--host: %s is not a loopback address: this load generator "
                "only connects to 127.0.0.0/8",
                host);
    if (opt.sources == 0)
        opt.sources = (opt.connections + 24999) / 25000;
    if (opt.processes > opt.connections)
        opt.processes = opt.connections;
    if (opt.rate > 0 &&
        2e9 * (double)opt.connections / opt.rate > (double)connect_phase_ns)
        connect_phase_ns = (uint64_t)(2e9 * (double)opt.connections / opt.rate);
}

int main(int argc, char **argv)
{
    cli_prog = "rota-idle-loadgen";
    parse_args(argc, argv);
    signal(SIGPIPE, SIG_IGN);

    long nofile = cli_raise_nofile();
    long share = (opt.connections + opt.processes - 1) / opt.processes;
    if (share + 16 > nofile)
        cli_die("%ld connections per process exceed the descriptor limit "
                "%ld: use --processes %ld or more",
                share, nofile, (opt.connections + nofile - 17) / (nofile - 16));

    pid_t pids[MAX_PROCS];
    int fds[MAX_PROCS];
    for (long i = 0; i < opt.processes; i++) {
        long first = opt.connections * i / opt.processes;
        long count = opt.connections * (i + 1) / opt.processes - first;
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) != 0) {
            perror("rota-idle-loadgen: pipe");
            return 1;
        }
        fflush(NULL);
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("rota-idle-loadgen: fork");
            return 1;
        }
        if (pids[i] == 0) {
            close(pipefd[0]);
            run_share(first, count, pipefd[1]);
            _exit(0);
        }
        close(pipefd[1]);
        fds[i] = pipefd[0];
    }

    /* Collect every child's summary and delays, reading all pipes at once
     * so no child blocks on a full pipe; give up after a bound. */
    size_t cap = (size_t)opt.connections;
    int64_t *delays = malloc(cap * sizeof *delays);
    struct summary total = {0};
    size_t nd = 0;
    struct {
        unsigned char buf[sizeof(struct summary)];
        size_t got;
        bool have_sum;
        bool eof;
        unsigned char part[sizeof(int64_t)];
        size_t partlen;
    } st[MAX_PROCS];
    memset(st, 0, sizeof st);
    uint64_t deadline =
        cli_mono_ns() + connect_phase_ns + opt.duration_ns + 30000000000ull;
    long open_pipes = opt.processes;
    bool timed_out = false;
    while (open_pipes > 0 && delays != NULL) {
        struct pollfd pf[MAX_PROCS];
        for (long i = 0; i < opt.processes; i++) {
            pf[i].fd = st[i].eof ? -1 : fds[i];
            pf[i].events = POLLIN;
        }
        uint64_t now = cli_mono_ns();
        if (now >= deadline) {
            timed_out = true;
            break;
        }
        if (poll(pf, (nfds_t)opt.processes,
                 (int)((deadline - now) / 1000000u + 1)) < 0 &&
            errno != EINTR)
            break;
        for (long i = 0; i < opt.processes; i++) {
            if (st[i].eof || !(pf[i].revents & (POLLIN | POLLHUP)))
                continue;
            unsigned char buf[65536];
            ssize_t n = read(fds[i], buf, sizeof buf);
            if (n <= 0) {
                st[i].eof = true;
                open_pipes--;
                continue;
            }
            for (ssize_t k = 0; k < n; k++) {
                if (!st[i].have_sum) {
                    st[i].buf[st[i].got++] = buf[k];
                    if (st[i].got == sizeof(struct summary)) {
                        struct summary s;
                        memcpy(&s, st[i].buf, sizeof s);
                        total.chatty += s.chatty;
                        total.silent += s.silent;
                        total.failed += s.failed;
                        total.chatty_closed += s.chatty_closed;
                        total.writes += s.writes;
                        total.echoed += s.echoed;
                        if (total.first_error == 0)
                            total.first_error = s.first_error;
                        st[i].have_sum = true;
                    }
                    continue;
                }
                st[i].part[st[i].partlen++] = buf[k];
                if (st[i].partlen == sizeof(int64_t)) {
                    if (nd < cap)
                        memcpy(&delays[nd++], st[i].part, sizeof(int64_t));
                    st[i].partlen = 0;
                }
            }
        }
    }
    for (long i = 0; i < opt.processes; i++) {
        if (timed_out)
            kill(pids[i], SIGKILL); /* our own children, by pid */
        waitpid(pids[i], NULL, 0);
        close(fds[i]);
    }
    if (delays == NULL) {
        fprintf(stderr, "rota-idle-loadgen: out of memory\n");
        return 1;
    }

    if (opt.report != NULL) {
        FILE *f = fopen(opt.report, "w");
        if (f == NULL) {
            perror(opt.report);
            return 1;
        }
        for (size_t i = 0; i < nd; i++) {
            if (delays[i] >= 0)
                fprintf(f, "%.3f\n", (double)delays[i] / 1e6);
            else
                fprintf(f, "%s\n", delays[i] == -1 ? "open" : "failed");
        }
        fclose(f);
    }

    /* Sort the closed ones; count the rest. */
    size_t closed = 0, never = 0, lo_bad = 0, hi_bad = 0;
    for (size_t i = 0; i < nd; i++) {
        if (delays[i] >= 0)
            delays[closed++] = delays[i];
        else if (delays[i] == -1)
            never++;
    }
    qsort(delays, closed, sizeof *delays, cmp_i64);
    for (size_t i = 0; i < closed; i++) {
        if (opt.has_min && (uint64_t)delays[i] < opt.expect_min_ns)
            lo_bad++;
        if (opt.has_max && (uint64_t)delays[i] > opt.expect_max_ns)
            hi_bad++;
    }

    printf("rota-idle-loadgen: %ld connections (%llu chatty, %llu silent) over "
           "%ld "
           "process(es) and %ld source address(es)\n",
           opt.connections, (unsigned long long)total.chatty,
           (unsigned long long)total.silent, opt.processes, opt.sources);
    printf("rota-idle-loadgen: writes=%llu echoed=%llu "
           "connect-failures=%llu%s%s\n",
           (unsigned long long)total.writes, (unsigned long long)total.echoed,
           (unsigned long long)total.failed, total.failed ? " first: " : "",
           total.failed ? strerror((int)total.first_error) : "");
    printf("rota-idle-loadgen: chatty closed by the server: %llu\n",
           (unsigned long long)total.chatty_closed);
    printf("rota-idle-loadgen: silent closed by the server: %zu, still open at "
           "the "
           "end: %zu\n",
           closed, never);
    if (closed != 0) {
        printf(
            "rota-idle-loadgen: close after last write (ms): min %.1f p50 %.1f "
            "p99 %.1f max %.1f\n",
            pct_ms(delays, closed, 0), pct_ms(delays, closed, 0.5),
            pct_ms(delays, closed, 0.99), pct_ms(delays, closed, 1));
        if (opt.idle_ns != 0) {
            double idle_ms = (double)opt.idle_ns / 1e6;
            printf("rota-idle-loadgen: kick lateness beyond the idle timeout "
                   "(ms): "
                   "min %.1f p50 %.1f p99 %.1f max %.1f\n",
                   pct_ms(delays, closed, 0) - idle_ms,
                   pct_ms(delays, closed, 0.5) - idle_ms,
                   pct_ms(delays, closed, 0.99) - idle_ms,
                   pct_ms(delays, closed, 1) - idle_ms);
        }
    }

    bool fail = false;
    if (timed_out) {
        printf("rota-idle-loadgen: FAIL: the run did not finish in time\n");
        fail = true;
    }
    if (total.failed != 0) {
        printf("rota-idle-loadgen: FAIL: %llu connect(s) failed\n",
               (unsigned long long)total.failed);
        fail = true;
    }
    if (total.chatty_closed != 0) {
        printf(
            "rota-idle-loadgen: FAIL: %llu chatty connection(s) closed by the "
            "server\n",
            (unsigned long long)total.chatty_closed);
        fail = true;
    }
    if (lo_bad != 0) {
        printf(
            "rota-idle-loadgen: FAIL: %zu silent connection(s) closed sooner "
            "than %.1f ms after their last write (first %.1f ms)\n",
            lo_bad, (double)opt.expect_min_ns / 1e6, pct_ms(delays, closed, 0));
        fail = true;
    }
    if (hi_bad != 0) {
        printf("rota-idle-loadgen: FAIL: %zu silent connection(s) closed later "
               "than %.1f ms after their last write (max %.1f ms)\n",
               hi_bad, (double)opt.expect_max_ns / 1e6,
               pct_ms(delays, closed, 1));
        fail = true;
    }
    if (opt.has_max && never != 0) {
        printf(
            "rota-idle-loadgen: FAIL: %zu silent connection(s) never closed\n",
            never);
        fail = true;
    }
    if (!fail && (opt.has_min || opt.has_max))
        printf("rota-idle-loadgen: OK\n");
    free(delays);
    return fail ? 1 : 0;
}
