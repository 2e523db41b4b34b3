/* Ground truth for tables of labels (issue 30): `run` is a byte-code interpreter that dispatches
 * through a table of its own labels' addresses (GCC's computed `goto`). The table holds eight
 * pointers into `run`, each a relocated word in data; the first indirect jump comes before every
 * label, so a walk from `run`'s start reaches none of them. The labels are code of `run`, not
 * procedures. */
#include <stdio.h>
#include <string.h>

static __attribute__((noinline)) long run(const unsigned char *pc, long acc) {
    static const void *const ops[] = {&&halt, &&add, &&sub, &&mul, &&dbl, &&neg, &&inc, &&dec};
    goto *ops[*pc & 7];
add:
    acc += pc[1];
    pc += 2;
    goto *ops[*pc & 7];
sub:
    acc -= pc[1];
    pc += 2;
    goto *ops[*pc & 7];
mul:
    acc *= pc[1];
    pc += 2;
    goto *ops[*pc & 7];
dbl:
    acc <<= 1;
    pc += 1;
    goto *ops[*pc & 7];
neg:
    acc = -acc;
    pc += 1;
    goto *ops[*pc & 7];
inc:
    acc++;
    pc += 1;
    goto *ops[*pc & 7];
dec:
    acc--;
    pc += 1;
    goto *ops[*pc & 7];
halt:
    return acc;
}

int main(int argc, char **argv) {
    unsigned char program[64] = {1, 5, 3, 7, 4, 6, 2, 3, 5, 7, 0};
    if (argc > 1) {
        size_t n = strlen(argv[1]);
        memcpy(program, argv[1], n < 63 ? n : 63);
        program[n < 63 ? n : 63] = 0;
    }
    printf("%ld\n", run(program, argc));
    return 0;
}
