/*
 * The driver of the fuzz harnesses in the normal build (WL_FUZZ off): every file of the
 * directories (or the files) named on the command line goes once through
 * LLVMFuzzerTestOneInput, as with libFuzzer's -runs=0, so that ctest's fuzz.<name> replays the
 * committed corpus. A crash, a failed FUZZ_CHECK or a sanitizer report fails the test.
 *
 * Without AddressSanitizer (whose leak checker does it otherwise) it also checks that every
 * input leaves no heap allocation behind: malloc and its kin are replaced by wrappers that
 * count live blocks around glibc's own, and each input runs twice with the second run counted
 * (the first may allocate what a library keeps for good, such as OpenSSL's tables).
 */
#include <dirent.h>
#include <malloc.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_COUNTS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_COUNTS 0
#endif
#endif
#ifndef REPLAY_COUNTS
#define REPLAY_COUNTS 1
#endif

#if REPLAY_COUNTS
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *p);

static long live_blocks;

static void *counted(void *p)
{
    if (p != NULL)
        __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return p;
}

void *malloc(size_t size)
{
    return counted(__libc_malloc(size));
}

void *calloc(size_t count, size_t size)
{
    return counted(__libc_calloc(count, size));
}

void *memalign(size_t alignment, size_t size)
{
    return counted(__libc_memalign(alignment, size));
}

void *aligned_alloc(size_t alignment, size_t size)
{
    return counted(__libc_memalign(alignment, size));
}

int posix_memalign(void **out, size_t alignment, size_t size)
{
    void *p = counted(__libc_memalign(alignment, size));
    if (p == NULL)
        return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void free(void *p)
{
    if (p != NULL)
        __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    __libc_free(p);
}

void *realloc(void *p, size_t size)
{
    if (p == NULL)
        return malloc(size);
    void *q = __libc_realloc(p, size);
    if (q == NULL && size == 0) /* glibc frees p */
        __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return q;
}
#endif

/* Runs one input from an exactly sized copy, so that reading past its end is caught. */
static bool replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return false;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    bool ok = data != NULL && size >= 0 && fread(data, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!ok) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(data);
        return false;
    }
    fprintf(stderr, "%s\n", path); /* named before it runs, in case it crashes */
    LLVMFuzzerTestOneInput(data, (size_t)size);
#if REPLAY_COUNTS
    long before = __atomic_load_n(&live_blocks, __ATOMIC_RELAXED);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    long left = __atomic_load_n(&live_blocks, __ATOMIC_RELAXED) - before;
    if (left != 0) {
        fprintf(stderr, "%s: the input left %ld heap block(s) behind\n", path, left);
        ok = false;
    }
#endif
    free(data);
    return ok;
}

static int not_hidden(const struct dirent *entry)
{
    return entry->d_name[0] != '.';
}

int main(int argc, char **argv)
{
    size_t inputs = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            inputs++;
            failed += !replay_file(argv[i]);
            continue;
        }
        struct dirent **entries;
        int n = scandir(argv[i], &entries, not_hidden, alphasort);
        if (n < 0) {
            perror(argv[i]);
            return 1;
        }
        for (int e = 0; e < n; e++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], entries[e]->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                inputs++;
                failed += !replay_file(path);
            }
            free(entries[e]);
        }
        free(entries);
    }
    fprintf(stderr, "%zu input(s) replayed, %zu failed\n", inputs, failed);
    return inputs == 0 || failed > 0 ? 1 : 0;
}
