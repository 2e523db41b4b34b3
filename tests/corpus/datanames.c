/* Ground-truth program for data names (issue 20, item 4): operands that land in a data
 * symbol (an array, a struct), in a string literal, and in an import's pointer slot, so the
 * names rea gives them can be checked against nm and objdump on the same file. */

#if defined(__clang__)
#define KEEP __attribute__((noinline, used))
#else
#define KEEP __attribute__((noipa, used))
#endif

extern int puts(const char *s);
extern void *stderr;
extern int fputs(const char *s, void *stream);

/* Writable, so no compiler folds a read of it into a constant. */
int OPS[4] = {10, 20, 30, 40};

struct config {
    int id;
    const char *name;
    int flags[3];
};

struct config CONFIG = {7, "config-name", {1, 2, 3}};

KEEP int read_ops2(void) { return OPS[2]; }

KEEP int read_flag1(void) { return CONFIG.flags[1]; }

KEEP void greet(void) { puts("datanames: hello from the string table"); }

KEEP void complain(void) { fputs("datanames: to stderr\n", stderr); }

int main(void) {
    greet();
    complain();
    return read_ops2() + read_flag1();
}
