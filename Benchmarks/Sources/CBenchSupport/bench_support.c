#include "bench_support.h"
#if defined(__linux__)
#include <malloc.h>
#endif
#if defined(__GLIBC__)
size_t bench_allocated_bytes(void) { struct mallinfo2 info = mallinfo2(); return info.uordblks + info.hblkhd; }
#else
size_t bench_allocated_bytes(void) { return 0; }
#endif

#if defined(__GLIBC__)
#include <stdatomic.h>

// Counts malloc calls without LD_PRELOAD: this executable defines malloc, calloc and realloc, so every
// shared library (the Swift runtime, Foundation, NIO) binds to these, and they forward to glibc's own
// entry points. Counting is off until a scenario turns it on, so the other scenarios pay one relaxed load.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);

static atomic_bool counting = false;
static atomic_ullong calls = 0;

static inline void count_call(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    }
}

void *malloc(size_t size) { count_call(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { count_call(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { count_call(); return __libc_realloc(pointer, size); }

void bench_count_allocations(bool on) { atomic_store_explicit(&counting, on, memory_order_relaxed); }
unsigned long long bench_allocation_calls(void) { return atomic_load_explicit(&calls, memory_order_relaxed); }
int bench_allocation_counting_available(void) { return 1; }
#else
void bench_count_allocations(bool on) { (void)on; }
unsigned long long bench_allocation_calls(void) { return 0; }
int bench_allocation_counting_available(void) { return 0; }
#endif
