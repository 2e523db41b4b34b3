/* Ground truth for switch jump tables (issue 27): `dispatch` is a dense switch of eighteen
 * cases, each calling a function of its own (AArch64 gcc emits a table from sixteen cases on,
 * x86-64 gcc and clang from five), so its indirect jump reads a table whose destinations are
 * code of `dispatch` itself. `via_pointer` makes a real indirect call that nothing resolves.
 * On x86-64 ELF, `jt_tail` (assembly) jumps through a table whose destinations are the starts
 * of two other functions: tail calls. Every function is kept out of line and out of
 * interprocedural optimization, so the edges written here are the edges in the binary. */

#if defined(__clang__)
#define KEEP __attribute__((noinline, used))
#else
#define KEEP __attribute__((noipa, used))
#endif

extern int printf(const char *format, ...);

KEEP int deep_leaf(int x) { return x * 31 - 4; }
KEEP int via_pointer(int (*fn)(int), int x) { return fn(x) + 1; }

KEEP int case_0(int x) { return x * 3 + 0; }
KEEP int case_1(int x) { return x * 4 + 1; }
KEEP int case_2(int x) { return x * 5 + 2; }
KEEP int case_3(int x) { return deep_leaf(x) * 6 + 3; }
KEEP int case_4(int x) { return x * 7 + 4; }
KEEP int case_5(int x) { return x * 8 + 5; }
KEEP int case_6(int x) { return x * 9 + 6; }
KEEP int case_7(int x) { return x * 10 + 7; }
KEEP int case_8(int x) { return x * 11 + 8; }
KEEP int case_9(int x) { return x * 12 + 9; }
KEEP int case_10(int x) { return x * 13 + 10; }
KEEP int case_11(int x) { return x * 14 + 11; }
KEEP int case_12(int x) { return x * 15 + 12; }
KEEP int case_13(int x) { return x * 16 + 13; }
KEEP int case_14(int x) { return x * 17 + 14; }
KEEP int case_15(int x) { return x * 18 + 15; }
KEEP int case_16(int x) { return x * 19 + 16; }
KEEP int case_17(int x) { return via_pointer(x & 1 ? case_0 : case_1, x) + 17; }
KEEP int fallback(int x) { return -x; }

KEEP int dispatch(int k, int x) {
    switch (k) {
    case 0: return case_0(x) + 1;
    case 1: return case_1(x) + 2;
    case 2: return case_2(x) + 3;
    case 3: return case_3(x) + 4;
    case 4: return case_4(x) + 5;
    case 5: return case_5(x) + 6;
    case 6: return case_6(x) + 7;
    case 7: return case_7(x) + 8;
    case 8: return case_8(x) + 9;
    case 9: return case_9(x) + 10;
    case 10: return case_10(x) + 11;
    case 11: return case_11(x) + 12;
    case 12: return case_12(x) + 13;
    case 13: return case_13(x) + 14;
    case 14: return case_14(x) + 15;
    case 15: return case_15(x) + 16;
    case 16: return case_16(x) + 17;
    case 17: return case_17(x) + 18;
    default: return fallback(x);
    }
}

#if defined(__x86_64__) && defined(__ELF__)
KEEP int tail_zero(int x) { return x + 1000; }
KEEP int tail_one(int x) { return x + 2000; }
int jt_tail(int k, int x);
/* jt_tail(k, x): tail_zero(x) for k == 0, tail_one(x) for k == 1, else 0; the table's third
 * entry is jt_tail's own code. */
__asm__(".text\n"
        ".globl jt_tail\n"
        ".type jt_tail, @function\n"
        "jt_tail:\n"
        "  cmp $2, %edi\n"
        "  ja .Ljt_tail_default\n"
        "  lea .Ljt_tail_table(%rip), %rdx\n"
        "  mov %edi, %edi\n"
        "  movslq (%rdx,%rdi,4), %rax\n"
        "  add %rdx, %rax\n"
        "  mov %esi, %edi\n"
        "  jmp *%rax\n"
        ".Ljt_tail_default:\n"
        "  xor %eax, %eax\n"
        "  ret\n"
        ".size jt_tail, .-jt_tail\n"
        ".section .rodata\n"
        ".balign 4\n"
        ".Ljt_tail_table:\n"
        "  .long tail_zero - .Ljt_tail_table\n"
        "  .long tail_one - .Ljt_tail_table\n"
        "  .long .Ljt_tail_default - .Ljt_tail_table\n"
        ".text\n");
#else
KEEP int jt_tail(int k, int x) { return k + x; }
#endif

int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", dispatch(argc, argc) + jt_tail(argc, argc));
    return 0;
}
