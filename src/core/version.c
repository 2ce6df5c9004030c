/* SPDX-License-Identifier: MIT */
/* rota_version(): the version of the library actually linked, which may
 * differ from the ROTA_VERSION_* macros a program was compiled with when a
 * newer shared library is installed under the same soname.  The string comes
 * from rota/version.h, the one place the version is written. */
#include "rota.h"

const char *rota_version(void)
{
    return ROTA_VERSION_STRING;
}
