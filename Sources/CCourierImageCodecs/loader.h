// Loading a codec library at run time (Linux). The codecs' headers are optional at build time and their
// libraries optional at run time: `swift build` works on a machine with neither (the README's first
// command), and a missing codec is a CCIC_UNAVAILABLE failure whose message names the package to install.
//
// Each codec file declares the functions it calls in an X-macro list, resolves them once with
// ccic_library_load, and calls them through CCIC_CALL, typed from the library's own header
// (`__typeof__(&name)`), so a prototype is never written twice.
#ifndef CCIC_LOADER_H
#define CCIC_LOADER_H
#include <stddef.h>

typedef struct ccic_library {
    const char *name;               // "libwebp", for messages
    const char *const *sonames;     // tried in order, NULL-terminated ("libwebp.so.7", ...)
    const char *package;            // the Debian package that ships the run-time library
    const char *const *symbols;     // NULL-terminated, in the order of `slots`
    void **slots;                   // resolved addresses
    int state;                      // 0 not tried, 1 loaded, -1 failed (under the loader's mutex)
    char error[200];
} ccic_library;

// Loads the library and resolves every symbol, once per process (thread-safe). CCIC_OK, or
// CCIC_UNAVAILABLE with a message naming the package to install.
int ccic_library_load(ccic_library *library, char *message, size_t capacity);

#define CCIC_SLOT_INDEX(prefix, name) prefix##_index_##name,
#define CCIC_SLOT_NAME(prefix, name) #name,
// A call through a resolved slot, with the type of the library's own declaration of `name`.
#define CCIC_CALL(prefix, name) ((__typeof__(&name))prefix##_slots[prefix##_index_##name])

// The message of a codec whose header was missing when Courier was built.
#define CCIC_NOT_BUILT(codec, devpackage)                                                                 \
    codec " support was not built: its headers were missing at build time (install " devpackage             \
          ", then `swift package clean` and build again)"
#endif
