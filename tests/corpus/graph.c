/* Ground-truth program for rea's differential suite (tests/it/corpus): a known call graph,
 * strings with leading control characters, short strings, literals packed back to back
 * without NULs, a table of function pointers (OPS) and a switch compiled to a jump table.
 * Every function is kept out of line and out of interprocedural optimization, so the call
 * edges written here are the edges in the binary at -O0 and at -O2. */

#if defined(__clang__)
#define KEEP __attribute__((noinline, used))
#else
#define KEEP __attribute__((noipa, used))
#endif

extern int puts(const char *s);

/* Where every string goes: a volatile buffer, so no call is optimized away. */
volatile char SINK[64];

KEEP void sink(const char *p, unsigned long n) {
    for (unsigned long i = 0; i < n; i++)
        SINK[i & 63] = p[i];
}

/* Literals packed back to back without a NUL between them, the way Rust and Go store
 * string slices: the array has exactly the length of the literal. */
const char PACKED[sizeof("https://releases.example.invalid/downloadberylliumcobaltnickel") - 1] =
    "https://releases.example.invalid/downloadberylliumcobaltnickel";

KEEP int leaf_add(int a, int b) { return a + b; }
KEEP int leaf_sub(int a, int b) { return a - b * 3; }
KEEP int leaf_mul(int a, int b) { return a * b + 7; }
static KEEP int leaf_xor(int a, int b) { return (a ^ b) - 11; }

typedef int (*op_fn)(int, int);

/* Data pointers to code: xrefs to each leaf name OPS as the containing symbol. */
op_fn const OPS[4] = {leaf_add, leaf_sub, leaf_mul, leaf_xor};

KEEP int apply(int i, int a, int b) { return OPS[i & 3](a, b); }

/* Dense enough that every compiler here emits an indirect jump through a table. */
KEEP int classify(int c) {
    switch (c) {
    case 0: return leaf_add(c, 1) + 5;
    case 1: return leaf_sub(c, 7) * 3;
    case 2: return leaf_mul(c, 9) - 2;
    case 3: return leaf_xor(c, 4) + 8;
    case 4: return apply(c, 2, 3) * 5;
    case 5: return leaf_add(c, 100) - 9;
    case 6: return leaf_mul(c, c) + 13;
    case 7: return leaf_sub(c, 1) ^ 21;
    default: return -1;
    }
}

KEEP void say_prompt(void) { sink("\nEnter password:", 16); }
KEEP void say_carriage(void) { sink("\rProgress 100%", 14); }
KEEP void say_tabbed(void) { sink("\tindented detail", 16); }
KEEP void say_short(void) {
    sink("OK", 2);
    sink("ab", 2);
}
KEEP void say_url(void) { sink(PACKED, 41); }
KEEP void say_beryllium(void) { sink(PACKED + 41, 9); }
KEEP void say_cobalt(void) { sink(PACKED + 50, 6); }

static KEEP int chain_c(int x) { return leaf_mul(x, 3) + 1; }
KEEP int chain_b(int x) { return chain_c(x) * 2 + leaf_sub(x, 2); }
KEEP int chain_a(int x) { return chain_b(x) + leaf_add(x, 1); }
KEEP int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
KEEP int tail_caller(int x) { return chain_c(x + 1); }

int main(int argc, char **argv) {
    (void)argv;
    say_prompt();
    say_carriage();
    say_tabbed();
    say_short();
    say_url();
    say_beryllium();
    say_cobalt();
    puts("graph done");
    return apply(argc, 1, 2) + classify(argc) + chain_a(argc) + fib(argc) + tail_caller(argc);
}
