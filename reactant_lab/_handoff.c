/* The spin-wait of reactant_lab's guarded calls (_backend_run.py). A guarded call runs on a
 * runner thread while the caller waits where Ctrl-C reaches it; handing the call over and back
 * through locks costs two thread wake-ups, about 76 us on a 2-vCPU virtual machine, where a
 * short call takes 0.1-0.5 ms. Instead, the caller spins here for the runner's "done" number
 * and the runner for the caller's next "posted" number, each for a bounded time and with
 * Python's GIL released (ctypes releases it around a call), so the other thread runs Python
 * meanwhile. The numbers are hints only: the locks and the queue of _backend_run carry the
 * jobs and their results, and whoever stops spinning falls back to them. Plain C, no Python
 * headers; built and loaded by reactant_lab/_native.py. */
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RL_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define RL_RELAX() __asm__ __volatile__("yield")
#else
#define RL_RELAX() ((void)0)
#endif

#define CLOCK_EVERY 64u /* spins between two looks at the clock */

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* words[0] is the number of the last call posted to a runner, words[1] of the last it ended.
 * Each store below comes after ctypes released the GIL: the thread that sees it can take the
 * GIL at once, where a store made while holding it would leave that thread to sleep on it. */

/* The caller: post call `number`, then spin until the runner ended it (return 1) or max_ns
 * nanoseconds passed (return 0). */
int rl_post_and_spin(int64_t *words, int64_t number, int64_t max_ns) {
    __atomic_store_n(&words[0], number, __ATOMIC_RELEASE);
    if (max_ns <= 0) return 0;
    int64_t end = now_ns() + max_ns;
    for (unsigned n = 1;; n++) {
        if (__atomic_load_n(&words[1], __ATOMIC_ACQUIRE) == number) return 1;
        if (n % CLOCK_EVERY == 0 && now_ns() >= end) return 0;
        RL_RELAX();
    }
}

/* The runner: mark call `number` ended, then spin until another is posted (return 1) or max_ns
 * nanoseconds passed (return 0). */
int rl_end_and_spin(int64_t *words, int64_t number, int64_t max_ns) {
    __atomic_store_n(&words[1], number, __ATOMIC_RELEASE);
    if (max_ns <= 0) return 0;
    int64_t end = now_ns() + max_ns;
    for (unsigned n = 1;; n++) {
        if (__atomic_load_n(&words[0], __ATOMIC_ACQUIRE) != number) return 1;
        if (n % CLOCK_EVERY == 0 && now_ns() >= end) return 0;
        RL_RELAX();
    }
}
