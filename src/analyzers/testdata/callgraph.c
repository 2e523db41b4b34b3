/* A program with a known call graph, for the call-path tests:
 *   main -> a -> b -> c,  main -> d -> c (d tail-calls c at -O2),
 *   main -> e -> {f, g} -> c (two shortest paths from e to c),
 *   main -> ping <-> pong (a recursive cycle),
 *   main -> via_pointer -> *f (an indirect call: a gap in the direct graph).
 * Every function is kept out of line and uncloned so the graph is the same at -O0 and -O2. */
#include <stdio.h>

#define KEEP __attribute__((noinline, noclone))

KEEP int c(int x) { return x * 3 + 1; }
KEEP int b(int x) { return c(x) + 2; }
KEEP int a(int x) { return b(x) - 1; }
KEEP int d(int x) { return c(x ^ 5); }
KEEP int f(int x) { return c(x) * 2; }
KEEP int g(int x) { return c(x) - 3; }
KEEP int e(int x) { return f(x) + g(x + 1); }
KEEP int ping(int n);
KEEP int pong(int n) { return n <= 0 ? 0 : ping(n - 1) + 1; }
KEEP int ping(int n) { return n <= 0 ? 0 : pong(n - 1) + 2; }
KEEP int via_pointer(int (*fn)(int), int x) { return fn(x) + 7; }

int main(int argc, char **argv) {
    (void)argv;
    int r = a(argc) + d(argc) + e(argc) + ping(argc);
    r += via_pointer(argc > 1 ? a : d, argc);
    printf("%d\n", r);
    return 0;
}
