/* SPDX-License-Identifier: MIT */
/* hello: an idle-connection timer in 20 lines of rota. */
#include <rota.h>
#include <stdio.h>

struct conn {
    int fd;
    struct rota_timer idle; /* embedded: no allocation per timer */
};

static void kick(struct rota_wheel *wheel, struct rota_timer *timer,
                 uint64_t late)
{
    struct conn *c = rota_container_of(timer, struct conn, idle);
    printf("closing idle fd %d at tick %llu (%llu late)\n", c->fd,
           (unsigned long long)rota_wheel_now(wheel), (unsigned long long)late);
}

int main(void)
{
    struct rota_wheel wheel;
    struct conn c = {.fd = 7};

    rota_wheel_init(&wheel, 0); /* time is yours: ticks */
    rota_timer_init(&c.idle, kick);
    rota_timer_arm_in(&wheel, &c.idle, 30); /* kick after 30 idle ticks */
    rota_wheel_advance(&wheel, 10);         /* a packet arrives at 10 */
    rota_timer_touch_at(&wheel, &c.idle, 10 + 30); /* refresh: a single store */
    printf("next deadline %llu\n",
           (unsigned long long)rota_wheel_next_deadline(&wheel));
    rota_wheel_advance(&wheel, 39); /* nothing: never early */
    rota_wheel_advance(&wheel, 40); /* fires exactly here */
    return rota_wheel_count(&wheel) == 0 ? 0 : 1;
}
