/*
 * POISON / UNPOISON: marks memory a pool keeps idle as off limits under
 * AddressSanitizer (a use after the buffer went back is caught), and
 * nothing otherwise.
 */
#ifndef BM_ASAN_POISON_H
#define BM_ASAN_POISON_H

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif
