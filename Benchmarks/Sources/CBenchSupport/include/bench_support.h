#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H
#include <stdbool.h>
#include <stddef.h>

/// Bytes currently allocated by malloc (glibc's mallinfo2().uordblks); 0 where unavailable.
size_t bench_allocated_bytes(void);

/// Turns counting of malloc/calloc/realloc calls (process-wide, every thread) on or off. glibc only:
/// the benchmark's executable interposes those three functions and forwards them to glibc's.
void bench_count_allocations(bool on);
/// malloc + calloc + realloc calls counted so far (while counting was on).
unsigned long long bench_allocation_calls(void);
/// 1 where the counter works (glibc), 0 elsewhere.
int bench_allocation_counting_available(void);

#endif
