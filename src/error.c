/* SPDX-License-Identifier: MIT */
/* rota_strerror(): messages come from the same X-macro list as the codes, so
 * a new code cannot be added without its message. */
#include "rota.h"

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
        return "unknown error";
    }
}
