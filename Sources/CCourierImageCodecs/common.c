#include "CCourierImageCodecs.h"
#include "common.h"
#include "loader.h"
#include <stdlib.h>
#ifdef __linux__
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t ccic_loader_mutex = PTHREAD_MUTEX_INITIALIZER;

// Resolves every symbol, or none (a library too old to have one of them counts as missing).
static void ccic_library_open(ccic_library *library) {
    void *handle = NULL;
    for (const char *const *soname = library->sonames; *soname != NULL && handle == NULL; soname++) {
        handle = dlopen(*soname, RTLD_NOW | RTLD_LOCAL);
    }
    if (handle == NULL) {
        snprintf(library->error, sizeof(library->error), "%s is not installed (install the %s package)",
                 library->name, library->package);
        library->state = -1;
        return;
    }
    for (size_t index = 0; library->symbols[index] != NULL; index++) {
        void *address = dlsym(handle, library->symbols[index]);
        if (address == NULL) {
            snprintf(library->error, sizeof(library->error), "%s has no %s (install a newer %s package)",
                     library->name, library->symbols[index], library->package);
            library->state = -1;
            dlclose(handle);
            return;
        }
        library->slots[index] = address;
    }
    library->state = 1; // the handle stays open for the life of the process
}

int ccic_library_load(ccic_library *library, char *message, size_t capacity) {
    pthread_mutex_lock(&ccic_loader_mutex);
    if (library->state == 0) ccic_library_open(library);
    const int state = library->state;
    pthread_mutex_unlock(&ccic_loader_mutex);
    if (state == 1) return CCIC_OK;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, "%s", library->error);
}
#endif

void ccic_free(void *pointer) { free(pointer); }
