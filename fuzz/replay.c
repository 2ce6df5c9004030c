/* SPDX-License-Identifier: MIT */
/*
 * replay.c - run fuzz_wheel.c's LLVMFuzzerTestOneInput() over files and
 * directories of inputs, without libFuzzer: the checked-in corpus becomes
 * a normal test for any compiler, and a crash file found by the fuzzer can
 * be replayed (under a debugger, or with ROTA_TRACE=1) in a plain build.
 *
 *   fuzz_replay FILE|DIR...
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replayed;

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    do {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *p = realloc(buf, cap);
            if (p == NULL) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = p;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len); /* aborts on a mismatch */
    free(buf);
    replayed++;
    return 0;
}

static int replay_path(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path);
    DIR *dir = opendir(path);
    if (dir == NULL) {
        perror(path);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        size_t need = strlen(path) + strlen(e->d_name) + 2;
        char *full = malloc(need);
        if (full == NULL) {
            rc = -1;
            break;
        }
        snprintf(full, need, "%s/%s", path, e->d_name);
        if (replay_path(full) != 0)
            rc = -1;
        free(full);
    }
    closedir(dir);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (replay_path(argv[i]) != 0)
            rc = 1;
    printf("replayed %d inputs\n", replayed);
    if (replayed == 0)
        rc = 1;
    return rc;
}
