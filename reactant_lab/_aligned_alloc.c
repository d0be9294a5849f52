/* reactant_lab's NumPy data allocator (NEP 49): every array's data starts on a 64-byte
 * boundary, the alignment XLA's CPU client needs to use a host buffer in place instead of
 * copying it. Built and loaded by reactant_lab/host_memory.py, which wraps these four
 * functions in NumPy's PyDataMem_Handler; plain C, no Python or NumPy headers.
 *
 * Each block is the C library's own (malloc, calloc, realloc), over-allocated by ALIGN plus
 * one pointer (and a page from PAGE_OFFSET_FROM up): the data starts at the first ALIGN
 * boundary past one pointer (for a large block, ALIGN bytes into a page, or where
 * rl_prefer_offsets says for its size), and the block's start is stored in the pointer just
 * before the data, for free and realloc. calloc stays
 * calloc, so large zeroed arrays keep the lazily zeroed pages NumPy's own allocator gets.
 * As NumPy's default allocator on Linux, blocks of 4 MiB and more ask for transparent huge
 * pages when the context says so.
 *
 * rl_stream_copy copies a large result into the caller's array (compile.copy_into) with
 * non-temporal stores where the CPU has them (SSE2): written past the cache, the destination's
 * lines are not read first, which a plain memcpy of tens of megabytes does.
 *
 * rl_swap_pages hands a large result to the caller's array without copying it, on Linux: the
 * whole memory pages inside the array trade places with the result's (mremap moves page table
 * entries, not data), and only the partial pages at either end are copied. */
#ifdef __linux__
#define _GNU_SOURCE /* mremap */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7; older kernels refuse it (EINVAL): nothing moves */
#endif
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define ALIGN 64u
#define PAGE_OFFSET_FROM ((size_t)1 << 20)
#define PAGE 4096u
#define HUGE_FROM ((size_t)1 << 22)

typedef struct {
    int hugepages; /* NumPy's madvise_hugepage setting when the handler was made */
} rl_context;

/* Bytes over the size asked for: room for the block's start and the alignment. From
 * PAGE_OFFSET_FROM up, the data starts ALIGN bytes into a page, where the C library's malloc
 * puts a block it maps on its own (XLA's large buffers), or at an offset rl_prefer_offsets
 * recorded for its size: rl_swap_pages can then trade the pages of an array and of such a
 * buffer, which must sit at the same offsets in their pages. */
static size_t extra_for(size_t size) {
    return size >= PAGE_OFFSET_FROM ? PAGE + ALIGN + sizeof(void *) : ALIGN + sizeof(void *);
}

/* Sizes whose blocks start elsewhere in their page than ALIGN bytes in: rl_prefer_offsets
 * records, for a size, the offsets of the buffers of XLA's that arrays of that size should
 * match (ones the C library put inside its heap, at any multiple of 64), and successive blocks
 * of that size take them in turn (a kernel updating four arrays of one size, each traded with
 * a buffer of its own). A few slots, reused in turn; a read racing a write at worst picks
 * another offset of the list, or another slot's, which is as valid. */
#define PREFER_SLOTS 8
#define PREFER_MAX 8
static volatile size_t prefer_size[PREFER_SLOTS];
static volatile unsigned prefer_count[PREFER_SLOTS];
static volatile unsigned prefer_at[PREFER_SLOTS][PREFER_MAX];
static volatile unsigned prefer_turn[PREFER_SLOTS];
static volatile unsigned prefer_next;

void rl_prefer_offsets(size_t size, const unsigned *offsets, unsigned n) {
    unsigned i, slot = PREFER_SLOTS;
    if (size < PAGE_OFFSET_FROM || n > PREFER_MAX) {
        return;
    }
    for (i = 0; i < n; i++) {
        if (offsets[i] >= PAGE || offsets[i] % ALIGN != 0) {
            return;
        }
    }
    for (i = 0; i < PREFER_SLOTS; i++) {
        if (prefer_size[i] == size) {
            slot = i;
        }
    }
    if (slot == PREFER_SLOTS) {
        if (n == 0) {
            return;
        }
        slot = prefer_next % PREFER_SLOTS;
        prefer_next = slot + 1;
    }
    prefer_size[slot] = 0; /* no reader takes the list while it changes */
    for (i = 0; i < n; i++) {
        prefer_at[slot][i] = offsets[i];
    }
    prefer_count[slot] = n;
    prefer_size[slot] = n == 0 ? 0 : size;
}

static uintptr_t page_offset_for(size_t size) {
    unsigned i, n, turn;
    for (i = 0; i < PREFER_SLOTS; i++) {
        if (prefer_size[i] == size) {
            n = prefer_count[i];
            if (n == 0 || n > PREFER_MAX) {
                break;
            }
            turn = prefer_turn[i];
            prefer_turn[i] = turn + 1;
            return prefer_at[i][turn % n] % PAGE;
        }
    }
    return ALIGN;
}

static char *aligned_in(void *block, size_t size) {
    uintptr_t start = (uintptr_t)block + sizeof(void *);
    if (size >= PAGE_OFFSET_FROM) {
        uintptr_t at = page_offset_for(size); /* a multiple of ALIGN below PAGE */
        return (char *)(((start - at + PAGE - 1) & ~(uintptr_t)(PAGE - 1)) + at);
    }
    return (char *)((start + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
}

static void *finish(void *ctx, void *block, size_t size) {
    char *data;
    if (block == NULL) {
        return NULL;
    }
    data = aligned_in(block, size);
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
    if (size > SIZE_MAX - extra_for(size)) {
        return NULL;
    }
    return finish(ctx, malloc(size + extra_for(size)), size);
}

void *rl_aligned_calloc(void *ctx, size_t nelem, size_t elsize) {
    size_t size;
    if (elsize != 0 && nelem > (SIZE_MAX - PAGE - ALIGN - sizeof(void *)) / elsize) {
        return NULL;
    }
    size = nelem * elsize;
    return finish(ctx, calloc(1, size + extra_for(size)), size);
}

void *rl_aligned_realloc(void *ctx, void *ptr, size_t new_size) {
    void *block, *moved;
    size_t offset, room;
    char *data;
    if (ptr == NULL) {
        return rl_aligned_malloc(ctx, new_size);
    }
    block = ((void **)ptr)[-1];
    offset = (size_t)((char *)ptr - (char *)block);
    /* Room for the data at its old offset (where realloc leaves it) and at its new one. */
    room = offset > extra_for(new_size) ? offset : extra_for(new_size);
    if (new_size > SIZE_MAX - room) {
        return NULL;
    }
    moved = realloc(block, new_size + room);
    if (moved == NULL) {
        return NULL; /* the old block is untouched, as realloc's contract says */
    }
    data = aligned_in(moved, new_size);
    if ((size_t)(data - (char *)moved) != offset) {
        /* The data's offset into the block changed (the block moved to an address with
         * another offset to the boundary, or the size crossed PAGE_OFFSET_FROM): the old
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

/* Give dst (n bytes) the contents of src (n bytes) by trading the whole pages inside dst for
 * src's pages at the same offsets; the partial pages at either end of dst are copied. Both
 * must be private anonymous memory (the C library's malloc: the caller checks whose memory
 * they are) at the same offset within a page, and apart. src's contents are lost: its middle
 * pages come back empty or holding dst's old contents. No thread can see a hole meanwhile:
 * MREMAP_DONTUNMAP leaves each range mapped (read as zeros for a moment) while its pages move.
 * Returns 1 when done; 0 when nothing changed (the caller copies instead: not Linux, offsets
 * that differ, less than a page, a kernel or mapping that refuses); -1 when dst's old pages
 * could not be put back after a refusal halfway (dst then reads as zeros in its middle). */
int rl_swap_pages(void *dst, void *src, size_t n) {
#if defined(__linux__) && defined(MREMAP_FIXED)
    long size = sysconf(_SC_PAGESIZE);
    uintptr_t page, d = (uintptr_t)dst, s = (uintptr_t)src, lo, hi;
    size_t len;
    char *src_lo;
    void *spare;
    if (size <= 0) {
        return 0;
    }
    page = (uintptr_t)size;
    if ((d & (page - 1)) != (s & (page - 1)) || n < page || d > UINTPTR_MAX - n) {
        return 0;
    }
    lo = (d + page - 1) & ~(page - 1);
    hi = (d + n) & ~(page - 1);
    if (hi <= lo) {
        return 0;
    }
    len = hi - lo;
    src_lo = (char *)src + (lo - d);
    /* A range of addresses of our own to hold dst's pages while src's move in. */
    spare = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (spare == MAP_FAILED) {
        return 0;
    }
    if (mremap((void *)lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, spare)
            == MAP_FAILED) {
        munmap(spare, len);
        return 0;
    }
    if (mremap(src_lo, len, len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, (void *)lo)
            == MAP_FAILED) {
        /* dst's own pages go back where they were */
        if (mremap(spare, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo) == MAP_FAILED) {
            return -1;
        }
        return 0;
    }
    /* dst's old pages become src's (a spare buffer's: its contents do not matter); should the
     * move fail, src keeps the empty pages and the old ones are let go. */
    if (mremap(spare, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, src_lo) == MAP_FAILED) {
        munmap(spare, len);
    }
    memcpy(dst, src, (size_t)(lo - d));
    memcpy((void *)hi, (char *)src + (hi - d), (size_t)(d + n - hi));
    return 1;
#else
    (void)dst;
    (void)src;
    (void)n;
    return 0;
#endif
}
