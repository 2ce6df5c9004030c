/* SPDX-License-Identifier: MIT */
/* A program linked with the installed debug library (librota_debug, through
 * rota::rota_debug or rota-debug.pc) instead of librota, its own code
 * unchanged and built without any flag: the library says it is the debug
 * one, and a misuse the normal library lets corrupt the wheel (a pending
 * timer initialised again, as when its object is freed and the memory
 * reused) is reported by name, the call doing nothing. */
#include <rota.h>

#include <stdio.h>
#include <string.h>

static int reports;
static char first[200];

static void on_misuse(const char *misuse, const struct rota_timer *timer,
                      void *arg)
{
    (void)timer;
    (void)arg;
    if (reports++ == 0)
        snprintf(first, sizeof first, "%s", misuse);
}

static int fired;

static void on_timer(struct rota_wheel *wheel, struct rota_timer *timer,
                     uint64_t late)
{
    (void)wheel;
    (void)timer;
    (void)late;
    fired++;
}

static struct rota_wheel wheel;
static struct rota_timer timer;

int main(void)
{
    if (!rota_debug_enabled()) {
        fprintf(stderr, "consumer_debug: linked a library without checks\n");
        return 1;
    }
    rota_debug_set_handler(on_misuse, NULL);
    rota_wheel_init(&wheel, 0);
    rota_timer_init(&timer, on_timer);
    rota_timer_arm_at(&wheel, &timer, 10);
    rota_timer_init(&timer, on_timer); /* the misuse: it is pending */
    if (reports != 1 ||
        strcmp(first, "rota_timer_init() of a pending timer") != 0) {
        fprintf(stderr, "consumer_debug: %d reports, first '%s'\n", reports,
                first);
        return 1;
    }
    /* Refused, so the wheel is intact: the timer fires once. */
    if (rota_wheel_advance(&wheel, 10) != 1 || fired != 1 ||
        rota_wheel_check(&wheel, NULL) != 0) {
        fprintf(stderr, "consumer_debug: the wheel did not stay intact\n");
        return 1;
    }
    printf("consumer_debug: %s %s reported \"%s\"\n", rota_version(),
           "debug library", first);
    return 0;
}
