#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H
#include <stddef.h>

/// Bytes currently allocated by malloc (glibc's mallinfo2().uordblks); 0 where unavailable.
size_t bench_allocated_bytes(void);

#endif
