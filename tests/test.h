/*
 * A minimal test harness shared by every test program: CHECK macros record
 * failures with file and line, and test_exit() turns them into the exit code
 * CTest reads. Each test program is its own process with its own timeout.
 */
#ifndef WALKLIST_TEST_H
#define WALKLIST_TEST_H

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        test_checks++;                                                                             \
        if (!(cond)) {                                                                             \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_INT(actual, expected)                                                                \
    do {                                                                                           \
        long long a_ = (long long)(actual), e_ = (long long)(expected);                            \
        test_checks++;                                                                             \
        if (a_ != e_) {                                                                            \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: %s is %lld, expected %lld\n", __FILE__, __LINE__, #actual, a_, \
                    e_);                                                                           \
        }                                                                                          \
    } while (0)

#define CHECK_STR(actual, expected)                                                                \
    do {                                                                                           \
        const char *a_ = (actual), *e_ = (expected);                                               \
        test_checks++;                                                                             \
        if (a_ == NULL || e_ == NULL ? a_ != e_ : strcmp(a_, e_) != 0) {                           \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #actual, \
                    a_ ? a_ : "(null)", e_ ? e_ : "(null)");                                       \
        }                                                                                          \
    } while (0)

/** Fails the test and prints a formatted reason. */
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        test_checks++;                                                                             \
        test_failures++;                                                                           \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                            \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
    } while (0)

static inline int test_exit(void)
{
    if (test_checks == 0) {
        fprintf(stderr, "no checks ran\n");
        return 1;
    }
    fprintf(stderr, "%d checks, %d failed\n", test_checks, test_failures);
    return test_failures == 0 ? 0 : 1;
}

/** CLOCK_MONOTONIC in milliseconds: the clock of a test's deadlines. */
static inline int64_t test_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/**
 * Polls done(data) every 5 ms until it holds or timeout_ms have passed; whether it holds. How a
 * test waits for what another thread or process does, rather than sleeping a guessed time.
 */
static inline bool test_wait_for(bool (*done)(void *data), void *data, int timeout_ms)
{
    int64_t give_up = test_now_ms() + timeout_ms;
    while (!done(data)) {
        if (test_now_ms() >= give_up)
            return done(data);
        struct timespec pause = {0, 5000000};
        nanosleep(&pause, NULL);
    }
    return true;
}

typedef struct {
    atomic_int *counter;
    int at_least;
} test_count_t;

static inline bool test_counted(void *count)
{
    const test_count_t *c = count;
    return atomic_load(c->counter) >= c->at_least;
}

/** test_wait_for of *counter (bumped by another thread) reaching at_least. */
static inline bool test_wait_for_count(atomic_int *counter, int at_least, int timeout_ms)
{
    test_count_t count = {counter, at_least};
    return test_wait_for(test_counted, &count, timeout_ms);
}

#endif
