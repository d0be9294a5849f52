/* reactant_lab's NumPy data allocator (NEP 49): every array's data starts on a 64-byte
 * boundary, the alignment XLA's CPU client needs to use a host buffer in place instead of
 * copying it. Built and loaded by reactant_lab/host_memory.py, which wraps these four
 * functions in NumPy's PyDataMem_Handler; plain C, no Python or NumPy headers.
 *
 * Each block is the C library's own (malloc, calloc, realloc), over-allocated by ALIGN plus
 * one pointer: the data starts at the first ALIGN boundary past one pointer, and the block's
 * start is stored in the pointer just before the data, for free and realloc. calloc stays
 * calloc, so large zeroed arrays keep the lazily zeroed pages NumPy's own allocator gets.
 * As NumPy's default allocator on Linux, blocks of 4 MiB and more ask for transparent huge
 * pages when the context says so.
 *
 * rl_stream_copy copies a large result into the caller's array (compile.copy_into) with
 * non-temporal stores where the CPU has them (SSE2): written past the cache, the destination's
 * lines are not read first, which a plain memcpy of tens of megabytes does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define ALIGN 64u
#define EXTRA (ALIGN + sizeof(void *))
#define HUGE_FROM ((size_t)1 << 22)

typedef struct {
    int hugepages; /* NumPy's madvise_hugepage setting when the handler was made */
} rl_context;

static char *aligned_in(void *block) {
    uintptr_t start = (uintptr_t)block + sizeof(void *);
    return (char *)((start + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
}

static void *finish(void *ctx, void *block, size_t size) {
    char *data;
    if (block == NULL) {
        return NULL;
    }
    data = aligned_in(block);
    ((void **)data)[-1] = block;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGE_FROM && ctx != NULL && ((rl_context *)ctx)->hugepages) {
        uintptr_t first = ((uintptr_t)data + 4095u) & ~(uintptr_t)4095u;
        uintptr_t end = (uintptr_t)data + size;
        if (end > first) {
            madvise((void *)first, end - first, MADV_HUGEPAGE); /* a hint: errors ignored */
        }
    }
#else
    (void)ctx;
    (void)size;
#endif
    return data;
}

void *rl_aligned_malloc(void *ctx, size_t size) {
    if (size > SIZE_MAX - EXTRA) {
        return NULL;
    }
    return finish(ctx, malloc(size + EXTRA), size);
}

void *rl_aligned_calloc(void *ctx, size_t nelem, size_t elsize) {
    size_t size;
    if (elsize != 0 && nelem > (SIZE_MAX - EXTRA) / elsize) {
        return NULL;
    }
    size = nelem * elsize;
    return finish(ctx, calloc(1, size + EXTRA), size);
}

void *rl_aligned_realloc(void *ctx, void *ptr, size_t new_size) {
    void *block, *moved;
    size_t offset;
    char *data;
    if (ptr == NULL) {
        return rl_aligned_malloc(ctx, new_size);
    }
    if (new_size > SIZE_MAX - EXTRA) {
        return NULL;
    }
    block = ((void **)ptr)[-1];
    offset = (size_t)((char *)ptr - (char *)block);
    moved = realloc(block, new_size + EXTRA);
    if (moved == NULL) {
        return NULL; /* the old block is untouched, as realloc's contract says */
    }
    data = aligned_in(moved);
    if ((size_t)(data - (char *)moved) != offset) {
        /* The block moved to an address with another offset to the boundary: the old
         * contents (at most new_size bytes of them count) sit at the old offset. */
        memmove(data, (char *)moved + offset, new_size);
    }
    ((void **)data)[-1] = moved;
    return data;
}

void rl_aligned_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    (void)size;
    if (ptr != NULL) {
        free(((void **)ptr)[-1]);
    }
}

void rl_stream_copy(void *dst, const void *src, size_t n) {
#ifdef __SSE2__
    char *d = (char *)dst;
    const char *s = (const char *)src;
    size_t head = (16u - ((uintptr_t)d & 15u)) & 15u, blocks, i;
    if (head > n) {
        head = n;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    blocks = n / 64u;
    for (i = 0; i < blocks; i++, d += 64, s += 64) {
        __m128i w0 = _mm_loadu_si128((const __m128i *)s);
        __m128i w1 = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i w2 = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i w3 = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, w0);
        _mm_stream_si128((__m128i *)(d + 16), w1);
        _mm_stream_si128((__m128i *)(d + 32), w2);
        _mm_stream_si128((__m128i *)(d + 48), w3);
    }
    _mm_sfence(); /* the streamed stores are visible before the call returns */
    memcpy(d, s, n - blocks * 64u);
#else
    memcpy(dst, src, n);
#endif
}
