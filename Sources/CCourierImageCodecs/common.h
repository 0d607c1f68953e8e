// Helpers shared by the codec files (not part of the public header).
#ifndef CCIC_COMMON_H
#define CCIC_COMMON_H
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>

static inline int ccic_fail(int code, char *message, size_t capacity, const char *format, ...) {
    if (message != NULL && capacity > 0) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(message, capacity, format, arguments);
        va_end(arguments);
    }
    return code;
}
#endif
