/* SPDX-License-Identifier: MIT */
/*
 * rota/version.h - the version of the headers a program is compiled against.
 *
 * This is the one place the version is written: the build reads the three
 * numbers below, so the shared libraries' names (the soname changes with
 * the major version), rota.pc and the CMake package version all follow
 * them.  It is a plain header, not generated, so rota.h compiles
 * without a build step (copied into a project, or as the single-file rota.h).
 *
 * These macros describe the headers; rota_version() tells the library the
 * program is running with, which may be a newer patch release.
 */
#ifndef ROTA_VERSION_H
#define ROTA_VERSION_H

#define ROTA_VERSION_MAJOR 0
#define ROTA_VERSION_MINOR 2
#define ROTA_VERSION_PATCH 0

#define ROTA__STRINGIFY(x) #x
#define ROTA__VERSION_PART(x) ROTA__STRINGIFY(x)
/* "MAJOR.MINOR.PATCH", built from the numbers above. */
#define ROTA_VERSION_STRING                                                    \
    ROTA__VERSION_PART(ROTA_VERSION_MAJOR)                                     \
    "." ROTA__VERSION_PART(ROTA_VERSION_MINOR) "." ROTA__VERSION_PART(         \
        ROTA_VERSION_PATCH)

/* One number that compares in order: ROTA_VERSION_NUMBER >= 0x000200 means
 * "0.2.0 or later". */
#define ROTA_VERSION_NUMBER                                                    \
    ((ROTA_VERSION_MAJOR << 16) | (ROTA_VERSION_MINOR << 8) |                  \
     ROTA_VERSION_PATCH)

#endif /* ROTA_VERSION_H */
