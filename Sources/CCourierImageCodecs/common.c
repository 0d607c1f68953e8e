#include "CCourierImageCodecs.h"
#include <stdlib.h>

void ccic_free(void *pointer) { free(pointer); }
