/*
 * Shared by the fuzz harnesses, tests/fuzz/fuzz_<name>.c: each one feeds one parser of outside
 * bytes and checks what must hold for every input. A harness is linked either with libFuzzer
 * (cmake -DWL_FUZZ=ON with clang; scripts/fuzz.sh NAME SECONDS) or with replay_main.c, which
 * runs every file of its corpus, tests/fuzz/corpus/<name>/, as the ctest test fuzz.<name>.
 */
#ifndef WALKLIST_FUZZ_H
#define WALKLIST_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property of every input; a failure aborts, which both drivers report with the input. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The input as a NUL-terminated string (cut at its first NUL), malloc'd. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    for (size_t i = 0; i < size; i++)
        s[i] = (char)data[i];
    s[size] = '\0';
    return s;
}

#endif
