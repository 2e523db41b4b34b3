/* A small calculator, the program of issue 28's matching tests, in two versions.
 *
 * -DV2: `op_mul` gains `+ 0x1337`; `run_ops` gains a call to the new `op_neg`; `dump_table`
 * is replaced, at the same place, by `count_big`, a function of another shape; `twin_a`, one
 * of two identical bodies, is removed.
 * Every function is `noipa` so that one change cannot alter how the others are compiled, and
 * identical bodies are not folded into one. */
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noipa))

KEEP long op_add(long a, long b) { return a + b; }

KEEP long op_sub(long a, long b) { return a - b; }

#ifdef V2
KEEP long op_mul(long a, long b) { return a * b * 31 + (a >> 2) - (b << 3) + 0x1337; }
#else
KEEP long op_mul(long a, long b) { return a * b * 31 + (a >> 2) - (b << 3); }
#endif

#ifdef V2
KEEP long op_neg(long a) { return -a; }
#endif

#ifndef V2
KEEP int twin_a(int x) { return x * 7 + 3; }
#endif

KEEP int twin_b(int x) { return x * 7 + 3; }

#ifdef V2
KEEP long count_big(const long *v, int n) {
    long big = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > 1000 || v[i] < -1000)
            big++;
    return big;
}
#else
KEEP void dump_table(const long *v, int n) {
    for (int i = 0; i < n; i++)
        printf("%d: %ld\n", i, v[i]);
    puts("end of table");
}
#endif

KEEP long run_ops(long a, long b) {
    long r = op_add(a, b) ^ op_sub(a, b);
    r += op_mul(a, b);
#ifdef V2
    r += op_neg(a);
#endif
    return r;
}

int (*volatile twins[])(int) = {
#ifndef V2
    twin_a,
#endif
    twin_b,
};

int main(int argc, char **argv) {
    long v[4] = {argc, 2000, -3, 4};
    long a = argc > 1 ? atol(argv[1]) : 3;
#ifdef V2
    printf("%ld\n", count_big(v, 4));
#else
    dump_table(v, 4);
#endif
    printf("%ld %d\n", run_ops(a, 5), twins[0](argc));
    return 0;
}
