/* System instructions and hints compilers emit: barriers, reading system registers, traps,
   pointer authentication and branch-target hints (built with -mbranch-protection=standard),
   yield/wfe for spin-waits, cache maintenance, supervisor calls, and CRC32. */
typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned char u8;

u64 read_counter(void) { u64 v; __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v)); return v; }
u64 read_frequency(void) { u64 v; __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v)); return v; }
u64 read_tpidr(void) { u64 v; __asm__ volatile("mrs %0, tpidr_el0" : "=r"(v)); return v; }
u64 read_fpcr(void) { u64 v; __asm__ volatile("mrs %0, fpcr" : "=r"(v)); return v; }
void write_fpcr(u64 v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
u64 read_nzcv(void) { u64 v; __asm__ volatile("mrs %0, nzcv" : "=r"(v)); return v; }
void barriers(void) {
    __asm__ volatile("dmb ish" ::: "memory");
    __asm__ volatile("dmb ishld" ::: "memory");
    __asm__ volatile("dmb ishst" ::: "memory");
    __asm__ volatile("dsb sy" ::: "memory");
    __asm__ volatile("dsb ish" ::: "memory");
    __asm__ volatile("isb" ::: "memory");
}
void hints(void) {
    __asm__ volatile("yield");
    __asm__ volatile("wfe");
    __asm__ volatile("sev");
    __asm__ volatile("nop");
    __asm__ volatile("hint #0x22");
}
void cache(void *p) {
    __asm__ volatile("dc cvau, %0" : : "r"(p) : "memory");
    __asm__ volatile("ic ivau, %0" : : "r"(p) : "memory");
    __asm__ volatile("dc civac, %0" : : "r"(p) : "memory");
    __asm__ volatile("dc zva, %0" : : "r"(p) : "memory");
}
u64 syscall3(u64 n, u64 a, u64 b, u64 c) {
    register u64 x8 __asm__("x8") = n;
    register u64 x0 __asm__("x0") = a;
    register u64 x1 __asm__("x1") = b;
    register u64 x2 __asm__("x2") = c;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
}
void trap(int x) { if (x) __builtin_trap(); }
void breakpoint(void) { __asm__ volatile("brk #0xf000"); }
#ifdef __clang__
#define CRC32B __builtin_arm_crc32b
#define CRC32H __builtin_arm_crc32h
#define CRC32W __builtin_arm_crc32w
#define CRC32CX __builtin_arm_crc32cd
#else
#define CRC32B __builtin_aarch64_crc32b
#define CRC32H __builtin_aarch64_crc32h
#define CRC32W __builtin_aarch64_crc32w
#define CRC32CX __builtin_aarch64_crc32cx
#endif
u32 crc(u32 c, u8 b, unsigned short h, u32 w, u64 d) { return CRC32B(c, b) ^ CRC32H(c, h) ^ CRC32W(c, w) ^ CRC32CX(c, d); }
extern int external_function(int);
int protected_call(int x) { return external_function(x) + external_function(x + 1); }
void *return_address(void) { return __builtin_return_address(0); }
void *frame_address(void) { return __builtin_frame_address(0); }
