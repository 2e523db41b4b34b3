"""rea's angr worker: decompiles one procedure at a time for rea's `angr` deep provider.

rea writes this script out, starts it with the interpreter its operator named, and talks to it in
JSON lines: one request on stdin, one reply on stdout, in order. The document's bytes come on file
descriptor 3 (a copy of exactly the bytes rea parsed), never by reopening a path. rea also says
where each section lies, the architecture, and the names it knows (procedures, imports, data), so
angr's own loaders are not used: the document is mapped as a `blob`, and a procedure's CFG covers
that procedure's region only (a whole-binary CFG takes minutes on a real program).

Requests and replies (every address in rea's numbering):
  {"op": "load", "arch": ..., "entry": ..., "segments": [...], "zero": [...],
   "names": [...], "imports": [...], "slots": [...]}     ->  {"ok": true}
  {"op": "decompile", "start": ..., "end": ..., "max_text_bytes": ..., "hints": {...}}
                                                          ->  {"ok": true, "text": ..., ...}
  {"op": "check", "kind": ..., "text": ..., "types": [...]}
                                                          ->  {"ok": true, "valid": ..., ...}
A failure is {"ok": false, "error": {"kind": ..., "message": ...}}; the worker goes on serving.
While it decompiles, the worker writes progress lines before the reply:
  {"event": "progress", "stage": "cfg" | "decompile", "percent": 0..100, "text": ...}
SIGINT while a request runs stops it: the reply is {"ok": false, "error": {"kind": "cancelled"}}
and the loaded document stays, so the next request is served without loading it again. SIGINT
between requests is ignored.
End of stdin ends the worker. Anything angr prints goes to stderr: stdout carries only replies.
"""

import bisect
import io
import json
import os
import platform
import signal
import sys
import threading
import time
import traceback

PROTOCOL = 1

# Images linked at address 0 (PIE executables, dylibs) are mapped this much higher: angr takes
# every constant inside the mapped range for an address, and small constants are everywhere.
# Addresses go back to rea's numbering in everything the worker answers.
LOW_IMAGE = 0x400000
BIAS = 0x400000

# One 16-byte cell per import reached through a pointer slot, past the highest mapped address:
# the slot is made to point at its cell, so a call through the slot reads as a call of the
# named import.
EXTERN_ALIGN = 0x10000
EXTERN_CELL = 16


# Prototypes of C++ runtime functions angr's libraries lack; calls of them otherwise get the
# argument count angr guesses from the registers set before the call.
RUNTIME_PROTOTYPES = {
    "__cxa_throw": "void __cxa_throw(void *thrown_exception, void *tinfo, void (*dest)(void *));",
    "__cxa_allocate_exception": "void *__cxa_allocate_exception(unsigned long thrown_size);",
    "__cxa_free_exception": "void __cxa_free_exception(void *thrown_exception);",
    "__cxa_begin_catch": "void *__cxa_begin_catch(void *exception_object);",
    "__cxa_end_catch": "void __cxa_end_catch(void);",
    "__cxa_rethrow": "void __cxa_rethrow(void);",
    "_Unwind_Resume": "void _Unwind_Resume(void *exception_object);",
}


class Cancelled(BaseException):
    """rea asked (SIGINT) to stop the request in progress. A BaseException, so that angr's own
    `except Exception` around its passes does not swallow it."""


class Requests:
    """The request in progress, for the SIGINT handler and the progress lines."""

    def __init__(self):
        self.busy = False
        self.cancelled = False
        self.sending = False
        self.send = None
        self.last = (None, -1.0, 0.0)

    def interrupt(self, signum, frame):
        if self.busy:
            self.cancelled = True
            # Never in the middle of a line on stdout: the next progress callback raises then.
            if not self.sending:
                raise Cancelled()

    def progress(self, stage):
        """A progress callback for an angr analysis of `stage`: a line at most every quarter
        second (or when the text changes), and a cancellation angr caught is raised again here."""

        def callback(percent, text=None, **kwargs):
            if self.cancelled:
                raise Cancelled()
            now = time.monotonic()
            last_stage, last_percent, last_time = self.last
            if stage == last_stage and text is None and (now - last_time < 0.25 or percent <= last_percent):
                return
            self.last = (stage, percent, now)
            if self.send is not None:
                self.send({"event": "progress", "stage": stage, "percent": round(float(percent), 1), "text": text})

        return callback


REQUESTS = Requests()


class Refusal(Exception):
    """A request the worker cannot serve; it says so and goes on."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def watch_parent():
    """Exit when rea goes away, even in the middle of a long decompilation."""
    parent = os.getppid()
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)


def correct_signedness(angr):
    """Make angr's C say the signedness its own IR has (the re-execution benchmark's failures).

    angr 9.2's code generator prints a signed comparison, division or arithmetic shift of a
    variable it typed unsigned without a cast (`if (v0 < 0)` that is never true), drops casts
    that change signedness before a widening (`(long long)(int)a0` becomes `a0`), and one of its
    peephole passes turns a signed 32-bit division into an unsigned one. These patches are
    rea's, applied in the worker only: where the IR's operation is signed and the operand's
    type is not (or the reverse), the operand gets a cast that later passes keep.
    """
    from angr.ailment.expression import BinaryOp, Convert
    from angr.analyses.decompiler.peephole_optimizations import remove_redundant_conversions
    from angr.analyses.decompiler.structured_codegen import c as cgen
    from angr.sim_type import SimTypeChar, SimTypeInt, SimTypeInt128

    ordered = {"CmpLT", "CmpLE", "CmpGT", "CmpGE", "Div", "Mod"}

    def integral(ty):
        return isinstance(ty, (SimTypeInt, SimTypeChar)) and getattr(ty, "signed", None) is not None

    class SignCast(cgen.CTypeCast):
        """A cast rea added (for signedness, or for a byte difference); `MakeTypecastsImplicit`
        keeps it."""

        __slots__ = ()

    def with_signedness(codegen, operand, signed):
        ty = operand.type
        if not integral(ty) or bool(ty.signed) == signed:
            return operand
        if ty.size == 128:
            new_ty = SimTypeInt128(signed=signed).with_arch(codegen.project.arch)
        else:
            new_ty = codegen.default_simtype_from_bits(ty.size, signed)
        if isinstance(operand, cgen.CConstant) and isinstance(operand.value, int):
            bits = ty.size
            value = operand.value & ((1 << bits) - 1)
            if signed and value >> (bits - 1):
                value -= 1 << bits
            return cgen.CConstant(value, new_ty, codegen=codegen, tags=operand.tags)
        return SignCast(None, new_ty, operand, codegen=codegen)

    binary = cgen.CStructuredCodeGenerator._handle_Expr_BinaryOp

    def handle_binary(self, expr, **kwargs):
        node = binary(self, expr, **kwargs)
        if not isinstance(node, cgen.CBinaryOp):
            return node
        if expr.op == "Sub":
            return byte_difference(self, node)
        if expr.op == "Mull":
            return widening_product(self, node, bool(expr.signed), expr.bits)
        if expr.op in arithmetic:
            node = pointers_as_integers(self, node, expr.op == "Sar" or bool(expr.signed))
        if expr.op.startswith("Cmp") or expr.op in ("Div", "Mod", "Shr", "Sar"):
            node = wrap_narrow_operands(self, node, expr)
        if expr.op in ordered:
            signed, sides = bool(expr.signed), ("lhs", "rhs")
        elif expr.op == "Sar":
            signed, sides = True, ("lhs",)
        elif expr.op == "Shr":
            signed, sides = False, ("lhs",)
        else:
            return node
        return replace_operands(node, sides, lambda operand, _: with_signedness(self, operand, signed))

    def replace_operands(node, sides, fix):
        """Sets each of the `sides` of `node` to `fix(operand, index)`, and types the node again
        when one changed."""
        changed = False
        for index, side in enumerate(sides):
            operand = getattr(node, side)
            fixed = fix(operand, index)
            if fixed is not operand:
                setattr(node, side, fixed)
                changed = True
        if changed:
            node.common_type = node.compute_common_type(node.op, node.lhs.type, node.rhs.type)
            if not node.op.startswith("Cmp"):
                node._type = node.common_type
        return node

    # C computes on types narrower than `int` in `int`; the IR computes at the operation's
    # width and wraps. `v1 - 48 > 9` of an `unsigned char v1` (`sub al, 0x30; cmp al, 9; ja`)
    # holds for v1 < 48 in the IR and not in C. Such a result is cast back to its width where
    # its upper bits count: compared, divided, shifted right, widened.
    wrapping = {"Add", "Sub", "Mul", "Shl"}

    def wrapped(codegen, operand, operand_expr, signed=None):
        if not (
            isinstance(operand_expr, BinaryOp)
            and operand_expr.op in wrapping
            and operand_expr.bits < 32
            and isinstance(operand, cgen.CBinaryOp)
            and operand.op == operand_expr.op
        ):
            return operand
        if signed is None:
            signed = bool(getattr(operand.type, "signed", False))
        narrow = codegen.default_simtype_from_bits(operand_expr.bits, signed)
        return SignCast(None, narrow, operand, codegen=codegen)

    def wrap_narrow_operands(codegen, node, expr):
        sides = ("lhs",) if expr.op in ("Shr", "Sar") else ("lhs", "rhs")
        signed = None
        if expr.op in ordered:
            signed = bool(expr.signed)
        elif expr.op in ("Shr", "Sar"):
            signed = expr.op == "Sar"
        return replace_operands(
            node, sides, lambda operand, index: wrapped(codegen, operand, expr.operands[index], signed)
        )

    # A register angr typed a pointer that holds a number (the byte difference of two
    # pointers, shifted to count elements) cannot be shifted, multiplied or masked in C: such
    # an operand is read as the integer of its width.
    arithmetic = {"Mul", "Div", "Mod", "Shl", "Shr", "Sar", "And", "Or", "Xor"}

    def pointers_as_integers(codegen, node, signed):
        def whole(operand, _):
            ty = operand.type
            if isinstance(ty, Pointer) and ty.size:
                number = codegen.default_simtype_from_bits(ty.size, signed)
                return SignCast(None, number, operand, codegen=codegen)
            return operand

        return replace_operands(node, ("lhs", "rhs"), whole)

    # The IR subtracts addresses in bytes (the machine code scales the difference itself), but
    # C subtracts pointers in elements: `(i - a0) >> 2` of two `int *` divides twice. The
    # difference of two pointers to wider elements is taken between `char *` casts.
    from angr.sim_type import SimTypePointer as Pointer

    def byte_difference(codegen, node):
        lhs, rhs = node.lhs.type, node.rhs.type
        if not (isinstance(lhs, Pointer) and isinstance(rhs, Pointer)):
            return node
        sizes = [getattr(t.pts_to, "size", None) for t in (lhs, rhs)]
        if all(size == 8 for size in sizes):
            return node
        byte = Pointer(SimTypeChar()).with_arch(codegen.project.arch)
        node.lhs = SignCast(None, byte, node.lhs, codegen=codegen)
        node.rhs = SignCast(None, byte, node.rhs, codegen=codegen)
        node.common_type = node.compute_common_type(node.op, node.lhs.type, node.rhs.type)
        node._type = node.common_type
        return node

    # A widening multiplication (`imul`'s 128-bit product, behind a division by a constant)
    # reads `a * b >> 64`, a product of 64-bit operands whose high half C never computes: the
    # first operand is cast to the product's width (`bits`), in the IR's signedness.
    # Each operand is read in that signedness at its own width first: C widens an `unsigned
    # long long` with zeros, where `imul` extends the sign.
    def widening_product(codegen, node, signed, bits):
        if bits == 128:
            wide = SimTypeInt128(signed=signed).with_arch(codegen.project.arch)
        else:
            wide = codegen.default_simtype_from_bits(bits, signed)
        node.lhs = SignCast(None, wide, with_signedness(codegen, node.lhs, signed), codegen=codegen)
        node.rhs = with_signedness(codegen, node.rhs, signed)
        node.common_type = wide
        node._type = wide
        return node

    # angr names 128-bit integers `int128_t` and `uint128_t`, which no C header defines; GCC and
    # Clang call them `__int128` and `unsigned __int128`.
    def int128_repr(self, name=None, full=0, memo=None, indent=0, name_parens=True):
        out = "__int128" if self.signed else "unsigned __int128"
        return out if name is None else f"{out} {name}"

    SimTypeInt128.c_repr = int128_repr

    cgen.CStructuredCodeGenerator._handle_Expr_BinaryOp = handle_binary

    # A sign extension of a variable typed unsigned (`smull x0, w1, w0` of an `unsigned int`):
    # angr casts it to the signed type first, `(long long)(int)a2`, but that inner cast is one
    # `MakeTypecastsImplicit` drops, and C then extends with zeros. It is kept.
    convert_expr = cgen.CStructuredCodeGenerator._handle_Expr_Convert

    def handle_convert(self, expr, **kwargs):
        node = convert_expr(self, expr, **kwargs)
        inner = getattr(node, "expr", None)
        if (
            expr.from_bits < expr.to_bits
            and isinstance(node, cgen.CTypeCast)
            and type(inner) is cgen.CTypeCast
            and inner.src_type is None
            and integral(inner.dst_type)
            and integral(inner.expr.type)
            and inner.dst_type.size == inner.expr.type.size
            and bool(inner.dst_type.signed) != bool(inner.expr.type.signed)
        ):
            node.expr = SignCast(None, inner.dst_type, inner.expr, codegen=self)
        elif expr.from_bits < expr.to_bits and isinstance(node, cgen.CTypeCast):
            node.expr = wrapped(self, node.expr, expr.operand)
        return node

    cgen.CStructuredCodeGenerator._handle_Expr_Convert = handle_convert

    implicit = cgen.MakeTypecastsImplicit
    collapse = implicit.collapse.__func__
    handle_cast = implicit.handle_CTypeCast

    def keep_collapse(cls, dst_ty, child):
        if isinstance(child, SignCast):
            return child
        return collapse(cls, dst_ty, child)

    def keep_cast(self, obj):
        if isinstance(obj, SignCast):
            obj.expr = self.handle(obj.expr)
            return obj
        result = handle_cast(self, obj)
        src, dst = obj.src_type, obj.dst_type
        # A widening, or a change of signedness at one size, changes the value: not implicit.
        if (
            result is not obj
            and integral(src)
            and integral(dst)
            and (src.size < dst.size or (src.size == dst.size and bool(src.signed) != bool(dst.signed)))
        ):
            return obj
        return result

    implicit.collapse = classmethod(keep_collapse)
    implicit.handle_CTypeCast = keep_cast

    # `Conv(64->32, Div(Conv(32->64, a), Conv(32->64, b)))` becomes `Div(a, b)` with the outer
    # conversion's signedness; the division's own (and its operands' extension) is what counts.
    # The same rewrite of a widening, `Conv(32->64, Div(Conv(64->32, a), Conv(64->32, b)))` into
    # a 64-bit `Div(a, b)`, is wrong for a signed division (AArch64's `sdiv w0, w1, w0`, whose
    # 32-bit result is zero-extended: -3 / 7 read as 613566756): such a widening stays as it is.
    peephole = remove_redundant_conversions.RemoveRedundantConversions
    convert = peephole._optimize_Convert

    def optimize_convert(self, expr):
        inner = expr.operand
        if (
            expr.from_bits < expr.to_bits
            and isinstance(inner, BinaryOp)
            and inner.op in ("Div", "Mod", "DivMod")
            and inner.signed
        ):
            return None
        out = convert(self, expr)
        if (
            isinstance(out, BinaryOp)
            and out.op in ("Div", "Mod")
            and isinstance(inner, BinaryOp)
            and inner.op in ("Div", "Mod", "DivMod")
        ):
            first = inner.operands[0]
            signed = bool(inner.signed) and isinstance(first, Convert) and bool(first.is_signed)
            if bool(out.signed) != signed:
                out = BinaryOp(out.idx, out.op, list(out.operands), signed, bits=out.bits, **out.tags)
        return out

    peephole._optimize_Convert = optimize_convert

    # `(a * M >> S) - (a >> 31)` is a division by a constant that rounds toward zero: only a
    # signed division is compiled so (an unsigned one has no sign term). angr takes the
    # signedness of the multiplication, which is unsigned after `movsxd; imul`: `v % 1000` of a
    # negative `v` read as an unsigned remainder.
    from angr.analyses.decompiler.peephole_optimizations import optimized_div_simplifier

    simplifier = optimized_div_simplifier.OptimizedDivisionSimplifier
    case_a = simplifier._match_case_a

    def match_case_a(self, expr0, expr1):
        out = case_a(self, expr0, expr1)
        if isinstance(out, BinaryOp) and out.op == "Div" and not out.signed:
            out = BinaryOp(out.idx, "Div", list(out.operands), True, bits=out.bits, **out.tags)
        return out

    simplifier._match_case_a = match_case_a

    # `a - (a / N) * N` becomes `a % N`, always unsigned; the remainder of a signed division is
    # signed (`-3 % 7` is -3, not 1).
    from angr.analyses.decompiler.peephole_optimizations import modulo_simplifier

    def signed_division(expr, depth=0):
        if depth > 4:
            return None
        if isinstance(expr, BinaryOp):
            if expr.op == "Div":
                return bool(expr.signed)
            operands = expr.operands
        elif isinstance(expr, Convert):
            operands = [expr.operand]
        else:
            return None
        for operand in operands:
            found = signed_division(operand, depth + 1)
            if found is not None:
                return found
        return None

    def signed_mod(node, signed):
        if isinstance(node, BinaryOp) and node.op == "Mod" and bool(node.signed) != signed:
            return BinaryOp(node.idx, "Mod", list(node.operands), signed, bits=node.bits, **node.tags)
        if isinstance(node, Convert):
            inner = signed_mod(node.operand, signed)
            if inner is not node.operand:
                return Convert(node.idx, node.from_bits, node.to_bits, node.is_signed, inner, **node.tags)
        return node

    modulo = modulo_simplifier.ModuloSimplifier
    modulo_optimize = modulo.optimize

    def optimize_modulo(self, expr, **kwargs):
        out = modulo_optimize(self, expr, **kwargs)
        if out is None or out is expr:
            return out
        signed = signed_division(expr)
        if signed:
            out = signed_mod(out, True)
        return out

    modulo.optimize = optimize_modulo

    # `unsigned char` printed as `char`.
    char_repr = SimTypeChar.c_repr

    def c_repr_char(self, name=None, full=0, memo=None, indent=0, name_parens=True):
        text = char_repr(self, name, full, memo, indent, name_parens)
        if type(self) is SimTypeChar and self.label is None and text.startswith("char"):
            arm = self._arch is not None and self._arch.name.startswith(("ARM", "AARCH"))
            if not self.signed:
                text = "unsigned " + text
            elif arm:
                # `char` is unsigned on ARM: say signed where angr means it.
                text = "signed " + text
        return text

    SimTypeChar.c_repr = c_repr_char

    # angr's type inference sometimes gives a register variable (or the return value) the type
    # pointer-to-array, and prints it as an array (`char ptr[2]`, `unsigned int [2] f(...)`):
    # not C that can be assigned or returned, and the code indexes it by element. A pointer to
    # the element is what the code does.
    from angr.sim_type import SimTypeArray, SimTypePointer
    from angr.sim_variable import SimRegisterVariable

    def pointer_for(ty, arch):
        if isinstance(ty, SimTypePointer) and isinstance(ty.pts_to, SimTypeArray):
            return SimTypePointer(ty.pts_to.elem_type).with_arch(arch)
        if isinstance(ty, SimTypeArray):
            return SimTypePointer(ty.elem_type).with_arch(arch)
        return ty

    variable_type = cgen.CStructuredCodeGenerator._get_variable_type

    def get_variable_type(self, var, is_global=False):
        ty = variable_type(self, var, is_global=is_global)
        if isinstance(var, SimRegisterVariable):
            return pointer_for(ty, self.project.arch)
        return ty

    cgen.CStructuredCodeGenerator._get_variable_type = get_variable_type

    function_init = cgen.CFunction.__init__

    def init_function(self, *args, **kwargs):
        function_init(self, *args, **kwargs)
        functy = getattr(self, "functy", None)
        if functy is not None and pointer_for(functy.returnty, self.codegen.project.arch) is not functy.returnty:
            functy.returnty = pointer_for(functy.returnty, self.codegen.project.arch)

    cgen.CFunction.__init__ = init_function

    local_vars = cgen.CFunction.get_unified_local_vars

    def get_unified_local_vars(self):
        arch = self.codegen.project.arch
        return {
            key: {
                (cvar, pointer_for(ty, arch) if isinstance(cvar.variable, SimRegisterVariable) else ty)
                for cvar, ty in pairs
            }
            for key, pairs in local_vars(self).items()
        }

    cgen.CFunction.get_unified_local_vars = get_unified_local_vars

    # Rotations and concatenations in C, not angr's `__ROL__(x, n)` and `a CONCAT b`, which
    # are neither C nor defined anywhere a reader (or a compiler) can look.
    def unsigned_of(bits):
        if bits == 128:
            return "unsigned __int128"
        return {8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}.get(bits)

    def width(node):
        ty = node.type
        return getattr(ty, "size", None)

    rol_chunks = cgen.CBinaryOp._c_repr_chunks_rol
    ror_chunks = cgen.CBinaryOp._c_repr_chunks_ror
    concat_chunks = cgen.CBinaryOp._c_repr_chunks_concat

    def rotation(self, left, fallback):
        bits = width(self.lhs)
        ty = unsigned_of(bits) if bits else None
        if ty is None:
            yield from fallback(self)
            return
        first, second = ("<<", ">>") if left else (">>", "<<")
        paren = cgen.CClosingObject("(")
        yield "(", paren
        yield f"({ty})", None
        yield from self._try_c_repr_chunks(self.lhs)
        yield f" {first} ", self
        yield from self._try_c_repr_chunks(self.rhs)
        yield " | ", None
        yield f"({ty})", None
        yield from self._try_c_repr_chunks(self.lhs)
        yield f" {second} ({bits} - ", self
        yield from self._try_c_repr_chunks(self.rhs)
        yield "))", paren

    def concat(self):
        high, low = width(self.lhs), width(self.rhs)
        whole = unsigned_of(high + low) if high and low else None
        part = unsigned_of(low) if low else None
        if whole is None or part is None:
            yield from concat_chunks(self)
            return
        paren = cgen.CClosingObject("(")
        yield "(", paren
        yield f"({whole})", None
        yield from self._try_c_repr_chunks(self.lhs)
        yield f" << {low} | ({whole})({part})", self
        yield from self._try_c_repr_chunks(self.rhs)
        yield ")", paren

    cgen.CBinaryOp._c_repr_chunks_rol = lambda self: rotation(self, True, rol_chunks)
    cgen.CBinaryOp._c_repr_chunks_ror = lambda self: rotation(self, False, ror_chunks)
    cgen.CBinaryOp._c_repr_chunks_concat = concat


def rewrite_arm64_conditions(angr):
    """Give angr a rewriter of AArch64's condition helper, as it has for x86, AMD64 and ARM.

    Without one, every AArch64 conditional select or branch on flags angr could not fold stays
    `arm64g_calculate_condition(163, v0, 0, 0)` in the pseudo-code: VEX's internal helper, which
    says nothing to a reader and does not compile. The helper's first operand packs the
    condition (upper bits) and the operation that set the flags (lower 4 bits); for a compare
    (SUB), an add (CMN/ADDS) and a logical operation (TST/ANDS) the conditions are comparisons
    of its operands, exactly (overflow conditions stay as they were).
    """
    from angr.ailment import Expr
    from angr.analyses.decompiler.ccall_rewriters import CCALL_REWRITERS
    from angr.analyses.decompiler.ccall_rewriters.rewriter_base import CCallRewriterBase

    # VEX's ARM64G_CC_OP_* and ARM64Cond* numbering.
    add, sub, logic = {1: 32, 2: 64}, {3: 32, 4: 64}, {9: 32, 10: 64}

    class Arm64CCallRewriter(CCallRewriterBase):
        __slots__ = ()

        def _rewrite(self, ccall):
            # `_ccall` is the helper renamed by an earlier pass, before its operands were known.
            if ccall.callee not in ("arm64g_calculate_condition", "_ccall") or len(ccall.operands) != 4:
                return None
            packed = ccall.operands[0]
            if not isinstance(packed, Expr.Const):
                return None
            cond, op = packed.value_int >> 4, packed.value_int & 0xF
            if cond == 14:
                return Expr.Const(ccall.idx, None, 1, ccall.bits, **ccall.tags)
            if cond == 15:
                return Expr.Const(ccall.idx, None, 0, ccall.bits, **ccall.tags)
            a, b = ccall.operands[1], ccall.operands[2]
            tags = ccall.tags
            if op in sub:
                bits = sub[op]
                a, b = narrow(a, bits, tags), narrow(b, bits, tags)
                zero = Expr.Const(None, None, 0, bits, **tags)
                difference = Expr.BinaryOp(None, "Sub", (a, b), False, bits=bits, **tags)
                table = {
                    0: ("CmpEQ", a, b, False), 1: ("CmpNE", a, b, False),
                    2: ("CmpGE", a, b, False), 3: ("CmpLT", a, b, False),
                    4: ("CmpLT", difference, zero, True), 5: ("CmpGE", difference, zero, True),
                    8: ("CmpGT", a, b, False), 9: ("CmpLE", a, b, False),
                    10: ("CmpGE", a, b, True), 11: ("CmpLT", a, b, True),
                    12: ("CmpGT", a, b, True), 13: ("CmpLE", a, b, True),
                }
            elif op in add:
                bits = add[op]
                a, b = narrow(a, bits, tags), narrow(b, bits, tags)
                zero = Expr.Const(None, None, 0, bits, **tags)
                total = Expr.BinaryOp(None, "Add", (a, b), False, bits=bits, **tags)
                table = {
                    0: ("CmpEQ", total, zero, False), 1: ("CmpNE", total, zero, False),
                    2: ("CmpLT", total, a, False), 3: ("CmpGE", total, a, False),
                    4: ("CmpLT", total, zero, True), 5: ("CmpGE", total, zero, True),
                }
            elif op in logic:
                bits = logic[op]
                a = narrow(a, bits, tags)
                zero = Expr.Const(None, None, 0, bits, **tags)
                # C and V are clear after a logical operation.
                table = {
                    0: ("CmpEQ", a, zero, False), 1: ("CmpNE", a, zero, False),
                    4: ("CmpLT", a, zero, True), 5: ("CmpGE", a, zero, True),
                    10: ("CmpGE", a, zero, True), 11: ("CmpLT", a, zero, True),
                    12: ("CmpGT", a, zero, True), 13: ("CmpLE", a, zero, True),
                }
            else:
                return None
            if cond not in table:
                return None
            name, lhs, rhs, signed = table[cond]
            r = Expr.BinaryOp(ccall.idx, name, (lhs, rhs), signed, **tags)
            if r.bits == ccall.bits:
                return r
            return Expr.Convert(None, r.bits, ccall.bits, False, r, **tags)

    def narrow(expr, bits, tags):
        if expr.bits == bits:
            return expr
        if isinstance(expr, Expr.Const):
            return Expr.Const(None, None, expr.value_int & ((1 << bits) - 1), bits, **tags)
        return Expr.Convert(None, expr.bits, bits, False, expr, **tags)

    CCALL_REWRITERS.setdefault("AARCH64", Arm64CCallRewriter)


def keep_operations(angr):
    """Arithmetic stays what the IR says. angr's structurer takes a branch condition
    to claripy and back, and reads claripy's arithmetic negation back as a logical one:
    AArch64's `negs w1, w0` under `csneg …, mi` (`i % 4` of a signed `i`), `0 - i < 0`, came
    back as `!i < 0`. And its eager evaluation folds the negation of a constant as a bitwise
    not: `cneg w0, w0, cs` of 7 returned -8. The round trip through claripy also keeps a signed
    division or remainder signed."""
    from angr.ailment import Expr
    from angr.analyses.decompiler.condition_processor import ConditionProcessor
    from angr.analyses.decompiler.peephole_optimizations.eager_eval import EagerEvaluation

    unary = EagerEvaluation._optimize_unaryop

    def optimize_unary(expr):
        operand = getattr(expr, "operand", None)
        if expr.op == "Neg" and isinstance(operand, Expr.Const) and isinstance(operand.value, int):
            return Expr.Const(expr.idx, None, -operand.value & ((1 << expr.bits) - 1), expr.bits, **expr.tags)
        return unary(expr)

    EagerEvaluation._optimize_unaryop = staticmethod(optimize_unary)

    core = ConditionProcessor.convert_claripy_bool_ast_core

    def convert(self, cond, memo):
        op = getattr(cond, "op", None)
        if op == "__neg__":
            operand = self.convert_claripy_bool_ast(cond.args[0], memo=memo)
            return Expr.UnaryOp(None, "Neg", operand, bits=operand.bits)
        if op in ("SDiv", "SMod"):
            lhs, rhs = (self.convert_claripy_bool_ast(a, memo=memo) for a in cond.args)
            name = "Div" if op == "SDiv" else "Mod"
            return Expr.BinaryOp(None, name, (lhs, rhs), True, bits=lhs.bits)
        return core(self, cond, memo)

    # The same round trip made every division and remainder in a condition unsigned (claripy's
    # `/` and `%` are): `a[i] == v % 1000` compared with the unsigned remainder of a negative v.
    import claripy
    from angr.analyses.decompiler import condition_processor

    def signed(build):
        return lambda expr, conv, _, ia: build(
            conv(expr.operands[0], nobool=True, ins_addr=ia), conv(expr.operands[1], nobool=True, ins_addr=ia)
        )

    condition_processor._ail2claripy_op_mapping.setdefault("Div (signed)", signed(claripy.SDiv))
    condition_processor._ail2claripy_op_mapping.setdefault("Mod (signed)", signed(claripy.SMod))

    ConditionProcessor.convert_claripy_bool_ast_core = convert


def walk_comma_expressions(angr):
    """angr's passes over its C tree (`CStructuredCodeWalker`: the pointer arithmetic fixer,
    the implicit casts, field references) do not go into a comma expression, which angr makes of
    a loop condition with statements in it. The pointer step there stayed in bytes:
    `(cur += 4, v2 = cur, v2 < v1)` on an `int *` went four elements at a time (`ptr_diff`,
    `arr_max`). They go into it now, as into any other expression."""
    from angr.analyses.decompiler.structured_codegen import c as cgen

    def handle(self, obj):
        obj.stmts = self.handle(obj.stmts)
        obj.expr = self.handle(obj.expr)
        return obj

    if not hasattr(cgen.CStructuredCodeWalker, "handle_CMultiStatementExpression"):
        cgen.CStructuredCodeWalker.handle_CMultiStatementExpression = handle


PARENTHESIZED = []


def parenthesized():
    """An expression of angr's C tree printed in parentheses, for the places where angr's own
    code generator leaves them out (made once, after angr is imported)."""
    if not PARENTHESIZED:
        from angr.analyses.decompiler.structured_codegen import c as cgen

        class Parenthesized(cgen.CExpression):
            __slots__ = ("inner",)

            def __init__(self, inner, **kwargs):
                super().__init__(**kwargs)
                self.inner = inner

            @property
            def type(self):
                return self.inner.type

            def c_repr_chunks(self, indent=0, asexpr=False):
                paren = cgen.CClosingObject("(")
                yield "(", paren
                yield from cgen.CExpression._try_c_repr_chunks(self.inner)
                yield ")", paren

        PARENTHESIZED.append(Parenthesized)
    return PARENTHESIZED[0]


def keep_negative_offsets(angr):
    """angr's code generator turns a pointer plus a negative constant into an element access at
    the positive offset (its own code marks the step "may not be correct"): `s[n - 1 - i]`
    read `s[1 + n + -1 * i]`. Where the constant is a whole number of elements, rea hands it
    to angr as one more index term, which angr keeps with its sign."""
    from angr.analyses.decompiler.structured_codegen import c as cgen
    from angr.sim_type import SimTypeArray, SimTypeInt, SimTypePointer

    original = cgen.CStructuredCodeGenerator._access
    CConstant = cgen.CConstant

    def access(self, expr, data_type, lvalue, *args, **kwargs):
        constant, terms = cgen.extract_terms(expr)
        kernels = [
            t
            for c, t in terms
            if isinstance(cgen.unpack_typeref(t.type), (SimTypePointer, SimTypeArray))
        ]
        if constant < 0 and len(kernels) == 1:
            pointee = cgen.unpack_typeref(cgen.unpack_pointer_and_array(kernels[0].type))
            size = (pointee.size or 0) // self.project.arch.byte_width if pointee is not None else 0
            if size and constant % size == 0:
                index = parenthesized()(CConstant(constant // size, SimTypeInt(), codegen=self), codegen=self)
                rebuilt = None
                for c, t in terms + [(size, index)]:
                    piece = t if c == 1 else cgen.CBinaryOp("Mul", CConstant(c, SimTypeInt(), codegen=self), t, codegen=self)
                    rebuilt = piece if rebuilt is None else cgen.CBinaryOp("Add", rebuilt, piece, codegen=self)
                expr = rebuilt
        return original(self, expr, data_type, lvalue, *args, **kwargs)

    cgen.CStructuredCodeGenerator._access = access


def offset_void_in_bytes(angr):
    """angr indexes a `void *` at a constant offset as if its elements were bytes, `(int)a0[4]`
    for the `int` at `a0 + 4` (`p->y` of an untyped `p`), which C refuses: `void` has no size.
    Such an access reads `*(int *)((char *)a0 + 4)`."""
    from angr.analyses.decompiler.structured_codegen import c as cgen
    from angr.sim_type import SimTypeChar, SimTypeInt, SimTypePointer

    original = cgen.CStructuredCodeGenerator._access_constant_offset

    def sized(ty):
        try:
            return ty.size is not None
        except Exception:  # noqa: BLE001 - a type that cannot say its size has none
            return False

    def access(self, expr, offset, data_type, lvalue, *args, **kwargs):
        data_type = cgen.unpack_typeref(data_type)
        base = cgen.unpack_typeref(cgen.unpack_pointer_and_array(expr.type)) if expr.type is not None else None
        if not offset or base is None or sized(base) or data_type is None or not sized(data_type):
            return original(self, expr, offset, data_type, lvalue, *args, **kwargs)
        arch = self.project.arch
        bytes_ = SimTypePointer(SimTypeChar()).with_arch(arch)
        address = cgen.CBinaryOp(
            "Add",
            cgen.CTypeCast(expr.type, bytes_, expr, codegen=self),
            cgen.CConstant(offset, SimTypeInt(), codegen=self),
            codegen=self,
        )
        target = SimTypePointer(data_type).with_arch(arch)
        return cgen.CUnaryOp("Dereference", cgen.CTypeCast(bytes_, target, address, codegen=self), codegen=self)

    cgen.CStructuredCodeGenerator._access_constant_offset = access


def suffix_unsigned_constants(angr):
    """A decimal constant has the first of `int`, `long`, `long long` that holds it, so an
    `unsigned int` constant of 2^31 or more printed bare is a `long`: `x * 2654435761` of an
    `unsigned int x` multiplies in 64 bits, and `>> 13` of it shifts in bits the code never
    had (`mix_bits`). Such a constant, and an `unsigned long long` one of 2^63 or more, gets
    the `U` suffix, which keeps it unsigned at its own width."""
    from angr.analyses.decompiler.structured_codegen import c as cgen
    from angr.sim_type import SimTypeInt

    original = cgen.CConstant.fmt_int

    def fmt_int(self, value):
        text = original(self, value)
        kind = self._type
        if (
            isinstance(kind, SimTypeInt)
            and not kind.signed
            and kind.size in (32, 64)
            and text.isdigit()
            and int(text) >= 1 << (kind.size - 1)
        ):
            return text + "U"
        return text

    cgen.CConstant.fmt_int = fmt_int


# The largest procedure (bytes of its blocks) that is decompiled again reading the values
# assignments hold: a bound by size, not time, so that the same procedure gets the same text.
REUSE_BYTES = 2048

# Whether the decompilation in progress reads values already assigned from their variables
# (see `reuse_assigned_values`): only when asked, for a decompilation done again.
REUSING = [False]


def reuse_assigned_values(angr):
    """angr folds a value into the condition or return that reads it, `return cur + 1` after
    `cur' = cur + 1`, and keeps the assignment for the loop's next iteration; leaving SSA can
    then give `cur` and `cur'` one variable, and the return adds one more (`collatz_steps`), or
    read a value it lost (`arr_sum`). When asked (`REUSING`), before leaving SSA, a condition
    or return that recomputes a value an assignment before it holds (in its block, or in a block
    that dominates it) reads that assignment's variable. In SSA this is the same value: the
    operands (registers and constants only, no memory) were defined before the assignment and,
    on every path to the reader, not again after it. Only asked for when the first
    decompilation is in doubt: on others it changes which values angr merges, not always for
    the better. Returns that step, for `watch_leaving_ssa`."""
    import networkx
    from angr.ailment.expression import BinaryOp, Const, Convert, UnaryOp, VirtualVariable
    from angr.ailment.statement import Assignment, ConditionalJump, Return

    depth_limit, dominators_limit, replacements_limit = 16, 8, 8

    def children(expr):
        if isinstance(expr, BinaryOp):
            return expr.operands
        if isinstance(expr, (UnaryOp, Convert)):
            return [expr.operand]
        return []

    def pure(expr, depth=0):
        if isinstance(expr, (VirtualVariable, Const)):
            return True
        if depth > depth_limit or not isinstance(expr, (BinaryOp, UnaryOp, Convert)):
            return False
        return all(pure(child, depth + 1) for child in children(expr))

    def find(expr, wanted, depth=0):
        if type(expr) is type(wanted) and expr.likes(wanted):
            return expr
        if depth > depth_limit:
            return None
        for child in children(expr):
            found = find(child, wanted, depth + 1)
            if found is not None:
                return found
        return None

    def readers(stmt):
        if isinstance(stmt, ConditionalJump):
            return [stmt.condition]
        if isinstance(stmt, Return):
            return list(stmt.ret_exprs)
        return []

    def assigned(stmt):
        if (
            isinstance(stmt, Assignment)
            and isinstance(stmt.dst, VirtualVariable)
            and isinstance(stmt.src, (BinaryOp, UnaryOp, Convert))
            and pure(stmt.src)
        ):
            return stmt.src, stmt.dst
        return None

    def reuse(stmt, values):
        for value, variable in values:
            for _ in range(replacements_limit):
                found = next((f for f in (find(r, value) for r in readers(stmt)) if f is not None), None)
                if found is None:
                    break
                replaced, stmt = stmt.replace(found, variable)
                if not replaced:
                    break
        return stmt

    def reuse_values(clinic, ail_graph):
        entry = next((b for b in ail_graph if (b.addr, b.idx) == clinic.entry_node_addr), None)
        try:
            idom = networkx.immediate_dominators(ail_graph, entry) if entry is not None else {}
        except Exception:  # noqa: BLE001 - without dominators, each block on its own
            idom = {}
        for block in list(ail_graph.nodes()):
            if not any(readers(s) for s in block.statements):
                continue
            values = []
            up = idom.get(block)
            for _ in range(dominators_limit):
                if up is None or up is block:
                    break
                values.extend(v for v in map(assigned, up.statements) if v is not None)
                if idom.get(up) is up:
                    break
                up = idom.get(up)
            for index, stmt in enumerate(block.statements):
                value = assigned(stmt)
                if value is not None:
                    values.append(value)
                elif readers(stmt):
                    block.statements[index] = reuse(stmt, values)

    return reuse_values


def keep_branch_operands(angr):
    """Leaving SSA, angr copies a loop's next value into the phi variable at the end of the
    block that jumps back, before that block's last statement, since nothing may follow a
    jump. A conditional jump there that reads the phi variable then reads the next iteration's
    value: `a0 >>= 1; while (a0 >> 1)` for `shr edi; jne` (`popcount_loop` counted a bit
    short). Before leaving SSA, such an operand is read into a variable of its own just before
    the jump, and the jump reads that variable. Returns that step, for `watch_leaving_ssa`."""
    from angr.ailment import AILBlockRewriter
    from angr.ailment.expression import Phi, VirtualVariable
    from angr.ailment.statement import Assignment, ConditionalJump
    from angr.utils.ssa import VVarUsesCollector

    def overwritten_at_end(ail_graph, block):
        """The phi variables of the block's successors that get another value from it."""
        here = (block.addr, block.idx)
        found = set()
        for successor in ail_graph.successors(block):
            for stmt in successor.statements:
                if isinstance(stmt, Assignment) and isinstance(stmt.src, Phi):
                    for source, vvar in stmt.src.src_and_vvars:
                        if source == here and vvar is not None and vvar.varid != stmt.dst.varid:
                            found.add(stmt.dst.varid)
        return found

    def keep(clinic, ail_graph, block):
        if not block.statements or not isinstance(block.statements[-1], ConditionalJump):
            return
        overwritten = overwritten_at_end(ail_graph, block)
        if not overwritten:
            return
        jump = block.statements[-1]
        collector = VVarUsesCollector()
        collector.walk_statement(jump, block=block, stmt_idx=len(block.statements) - 1)
        read = []
        for varid in sorted(collector.vvars & overwritten):
            uses = collector.vvar_and_uselocs.get(varid)
            if not uses:
                return
            read.append(uses[0][0])
        if not read:
            return
        kept = {}
        for vvar in read:
            kept[vvar.varid] = VirtualVariable(
                None, clinic.vvar_id_start, vvar.bits, vvar.category, oident=vvar.oident, **vvar.tags
            )
            clinic.vvar_id_start += 1
            copy = Assignment(None, kept[vvar.varid], vvar, **jump.tags)
            block.statements.insert(len(block.statements) - 1, copy)

        def rename(expr_idx, expr, stmt_idx, stmt, block_):
            return kept.get(expr.varid, expr)

        rewriter = AILBlockRewriter()
        rewriter.expr_handlers[VirtualVariable] = rename
        block.statements[-1] = rewriter.walk_statement(jump) or jump

    def keep_operands(clinic, ail_graph):
        for block in list(ail_graph.nodes()):
            keep(clinic, ail_graph, block)

    return keep_operands


# The phi variables of the decompilation in progress that angr gave one C variable although the
# code holds their values apart at once (see `find_merged_values`).
MERGED = []


def find_merged_values(angr):
    """angr leaves SSA by Sreedhar's method, which checks each phi against its own sources
    only: values chained through two phis (`cur` before and after `cur += 1`, both read once a
    return was duplicated) can get one variable although both are live at once, and the
    pseudo-code then reads the newer value where the code reads the older (`collatz_steps`
    returned one step too many). After angr's mapping, the values mapped to one variable are
    checked against angr's own interference graph, and the variables holding interfering values
    are recorded in `MERGED`. Returns that step, for `watch_leaving_ssa`."""
    import itertools
    from collections import defaultdict

    def record_merged(clinic, ail_graph, arg_vvars, mapping):
        classes = defaultdict(list)
        for varid, representative in mapping.items():
            classes[representative].append(varid)
        if not any(len(members) > 2 for members in classes.values()):
            return
        try:
            entry = next(b for b in ail_graph if (b.addr, b.idx) == clinic.entry_node_addr)
            liveness = clinic.project.analyses.SLiveness(
                clinic.function,
                func_graph=ail_graph,
                entry=entry,
                arg_vvars=[vvar for vvar, _ in arg_vvars.values()],
            )
            interference = liveness.interference_graph()
        except Exception:  # noqa: BLE001 - no check is no finding
            return
        for representative, members in classes.items():
            if any(interference.has_edge(a, b) for a, b in itertools.combinations(members, 2)):
                MERGED.append(representative)

    return record_merged


def watch_leaving_ssa(angr):
    """rea's steps around angr's way out of SSA (`Clinic`'s dephication mapping), in their
    order: the values assignments hold are read again when asked (`reuse_assigned_values`), a
    loop test's operands are kept from the copy before its jump (`keep_branch_operands`), angr
    maps the values to variables, and the values it merged while both are live are recorded
    (`find_merged_values`)."""
    from angr.analyses.decompiler.clinic import Clinic

    reuse_values = reuse_assigned_values(angr)
    keep_operands = keep_branch_operands(angr)
    record_merged = find_merged_values(angr)
    original = Clinic._collect_dephi_vvar_mapping_and_rewrite_blocks

    def collect(self, ail_graph, arg_vvars):
        if REUSING[0]:
            reuse_values(self, ail_graph)
        keep_operands(self, ail_graph)
        mapping, copied = original(self, ail_graph, arg_vvars)
        record_merged(self, ail_graph, arg_vvars, mapping)
        return mapping, copied

    Clinic._collect_dephi_vvar_mapping_and_rewrite_blocks = collect


# Whether angr's AIL simplifier folds expressions into their uses (its default). Folding is what
# loses a loop's last value (see `unassigned_reads`); a decompilation that lost one is done again
# without it, which the re-execution benchmark finds right where the first was wrong, and the
# text that reads better where both are right.
FOLDING = [True]


def fold_when_asked(angr):
    from angr.analyses.decompiler import ail_simplifier

    init = ail_simplifier.AILSimplifier.__init__

    def simplifier(self, *args, **kwargs):
        if not FOLDING[0]:
            kwargs["fold_expressions"] = False
        init(self, *args, **kwargs)

    ail_simplifier.AILSimplifier.__init__ = simplifier



def fit_integers_to_variables(angr):
    """Typehoon gives a variable the widest of the types its uses suggest, so the register
    operand of a widening multiplication (`imul` behind `k % 6`) became an `unsigned __int128`
    argument: a value of two registers, of which the caller sets one (`switch_long`). An
    integer type wider than the register or stack slot it lives in is cut to the slot's size,
    in the same signedness; the operations that read it wider cast it themselves."""
    from angr.knowledge_plugins.variables.variable_manager import VariableManagerInternal
    from angr.sim_type import SimTypeChar, SimTypeInt, SimTypeLongLong, SimTypeShort
    from angr.sim_variable import SimRegisterVariable, SimStackVariable

    by_size = {1: SimTypeChar, 2: SimTypeShort, 4: SimTypeInt, 8: SimTypeLongLong}
    original = VariableManagerInternal.set_variable_type

    def set_variable_type(self, var, ty, *args, **kwargs):
        size = getattr(var, "size", None)
        if (
            isinstance(var, (SimRegisterVariable, SimStackVariable))
            and size in by_size
            and isinstance(ty, (SimTypeInt, SimTypeChar))
            and ty.size is not None
            and ty.size > size * 8
        ):
            ty = by_size[size](signed=ty.signed, label=ty.label).with_arch(self.manager._kb._project.arch)
        return original(self, var, ty, *args, **kwargs)

    VariableManagerInternal.set_variable_type = set_variable_type


# The region being decompiled, `(start, end)`, while its CFG is built.
REGION = [None]


def keep_jumps_inside(angr):
    """angr's CFG takes a jump that is a function's first instruction for a jump into another
    function (a thunk), so a procedure that gcc -O2 starts with a jump to its loop test
    (`to_upper`: `jmp` to the `*s` check) read as a call to `sub_…`, a part of itself, that does
    not exist. rea knows the procedure's region: a jump inside it stays in the procedure."""
    from angr.analyses.cfg.cfg_fast import CFGFast

    original = CFGFast._is_branching_to_outside

    def branching(self, src_node, target_addr, current_function_addr, jumpkind, all_successors):
        to_outside, target = original(self, src_node, target_addr, current_function_addr, jumpkind, all_successors)
        region = REGION[0]
        if (
            to_outside
            and region is not None
            and jumpkind == "Ijk_Boring"
            and current_function_addr == region[0]
            and region[0] < target_addr < region[1]
        ):
            return False, current_function_addr
        return to_outside, target

    CFGFast._is_branching_to_outside = branching


# A local the pseudo-code declares and reads but never assigns: angr lost the value it holds
# (a loop's last value, a register merged at a join), so the code is wrong where it is read.
DECLARATION = None


def unassigned_reads(text):
    """Limitations naming the register variables the text reads but never assigns."""
    import re

    global DECLARATION
    if DECLARATION is None:
        DECLARATION = re.compile(r"^\s+[A-Za-z_][\w \*]*?[\s\*]([A-Za-z_]\w*)(?:\[\d+\])?;\s+//\s+(\S+)")
    lines = text.splitlines()
    declared = {}
    body_from = 0
    for number, line in enumerate(lines):
        m = DECLARATION.match(line)
        if m:
            # Stack variables (`[bp-0x1c]`) can be written through a pointer; only registers.
            if not m.group(2).startswith("["):
                declared[m.group(1)] = number
            body_from = number + 1
        elif line.strip() == "{" and not declared:
            body_from = number + 1
    found = []
    for name in declared:
        assigned = re.compile(
            r"(\b%s\s*(=(?!=)|\+=|-=|\*=|/=|%%=|&=|\|=|\^=|<<=|>>=|\+\+|--))|((\+\+|--|&)\s*%s\b)" % (name, name)
        )
        used = re.compile(r"\b%s\b" % name)
        body = lines[body_from:]
        if any(assigned.search(line) for line in body):
            continue
        reads = [body_from + i + 1 for i, line in enumerate(body) if used.search(line)]
        if reads:
            found.append(
                f"{name} is read (line {reads[0]}) but never assigned: angr lost the value it "
                "holds there, so the pseudo-code is wrong at that line"
            )
    return found


class Worker:
    def __init__(self, angr, archinfo):
        self.angr = angr
        self.archinfo = archinfo
        self.project = None
        self.bias = 0
        self.low = 0
        self.high = 0
        # biased address -> rea's name; biased address -> import name (for prototypes)
        self.names = {}
        self.imports = {}
        # biased extern cell -> rea's pointer slot address
        self.cells = {}
        self.labels = {}
        self.reverse_labels = {}

    def load(self, request):
        angr = self.angr
        with os.fdopen(3, "rb", closefd=True) as document:
            data = document.read()
        arch = self.archinfo.arch_from_id(request["arch"])
        segments = [(s["offset"], s["address"], s["size"]) for s in request["segments"]]
        zero = [(z["address"], z["size"]) for z in request.get("zero", [])]
        if not segments:
            raise Refusal("bad-request", "the document has no mapped bytes")
        low = min([a for _, a, _ in segments] + [a for a, _ in zero])
        high = max([a + n for _, a, n in segments] + [a + n for a, n in zero])
        bias = BIAS if low < LOW_IMAGE else 0
        base = low + bias
        project = angr.Project(
            io.BytesIO(data),
            main_opts={
                "backend": "blob",
                "arch": arch,
                "base_addr": base,
                "entry_point": (request.get("entry") or segments[0][1]) + bias,
                "segments": [(o, a + bias, n) for o, a, n in segments],
            },
            auto_load_libs=False,
            load_debug_info=False,
        )
        set_platform(project, request.get("platform"))
        main = project.loader.main_object
        for address, size in zero:
            main.memory.add_backer(address + bias - base, bytearray(size))
        names = {n["address"] + bias: n["name"] for n in request.get("names", [])}
        imports = {i["address"] + bias: i["name"] for i in request.get("imports", [])}
        cells = {}
        slots = request.get("slots", [])
        if slots:
            first = (high + bias + EXTERN_ALIGN - 1) // EXTERN_ALIGN * EXTERN_ALIGN + EXTERN_ALIGN
            main.memory.add_backer(first - base, bytearray(EXTERN_CELL * len(slots)))
            order = "little" if arch.memory_endness == "Iend_LE" else "big"
            for index, slot in enumerate(slots):
                cell = first + index * EXTERN_CELL
                try:
                    main.memory.store(slot["address"] + bias - base, cell.to_bytes(arch.bytes, order))
                except Exception:
                    # A slot outside the mapped bytes stays as it is.
                    continue
                names.setdefault(cell, slot["name"])
                imports[cell] = slot["name"]
                cells[cell] = slot["address"]
        self.project = project
        self.bias, self.low, self.high = bias, low, high
        self.names, self.imports, self.cells = names, imports, cells
        self.labels = dict(names)
        self.reverse_labels = {}
        for address, name in names.items():
            self.reverse_labels.setdefault(name, address)
        return {"ok": True}

    def _label(self, kb):
        """Gives a fresh knowledge base rea's names, in bulk: 17,000 names one by one cost more
        than the CFG of a small procedure. angr's artificial `_start` label goes."""
        kb.labels._labels = dict(self.labels)
        kb.labels._reverse_labels = dict(self.reverse_labels)

    def rea_address(self, address):
        """A biased address in rea's numbering (extern cells become their pointer slots)."""
        if address in self.cells:
            return self.cells[address]
        return address - self.bias

    def decompile(self, request):
        angr = self.angr
        if self.project is None:
            raise Refusal("bad-request", "no document is loaded")
        project = self.project
        start = request["start"] + self.bias
        end = request["end"] + self.bias
        if end <= start:
            raise Refusal("bad-request", f"empty region {request['start']:#x}..{request['end']:#x}")
        limitations = []
        # A fresh knowledge base per procedure: nothing of an earlier CFG leaks into this one,
        # and memory does not grow with the calls. Some analyses read `project.kb` directly.
        kb = angr.KnowledgeBase(project, name="rea")
        project.kb = kb
        self._label(kb)
        # The procedures it calls or tail-jumps to: their prototypes come from their own code,
        # and those it tail-jumps to are lifted with it, so that the jump reads as a call.
        callees = [
            (c["start"] + self.bias, c["end"] + self.bias, c["tail"])
            for c in request.get("callees", [])
            if c["end"] > c["start"] and not (c["start"] + self.bias <= start < c["end"] + self.bias)
        ]
        tails = [(low, high) for low, high, tail in callees if tail]
        began = time.monotonic()
        REGION[0] = (start, end)
        try:
            # The region first, then the procedures it tail-jumps to.
            cfg = self.cfg(kb, [(start, end)] + tails)
        finally:
            REGION[0] = None
        cfg_seconds = time.monotonic() - began
        if start not in kb.functions:
            raise Refusal("lift", "angr found no function there (its first bytes did not lift)")
        function = kb.functions[start]
        # Callees outside the region are known only by address: rea's names, and angr's library
        # prototypes for imports, make calls read as calls with their arguments.
        for callee in list(kb.functions.values()):
            if callee.addr == start:
                continue
            if callee.addr in self.imports:
                self.library_prototype(callee)
            if callee.addr in self.names:
                callee.name = self.names[callee.addr]
            elif callee.is_default_name:
                callee.name = f"sub_{self.rea_address(callee.addr):x}"
        self.callee_prototypes(kb, [(low, high) for low, high, _ in callees])
        if start in self.names:
            function.name = self.names[start]
        elif function.is_default_name:
            function.name = f"sub_{self.rea_address(start):x}"
        labels = self.apply_hints(kb, request.get("hints") or {}, limitations)
        for jump in sorted(cfg.indirect_jumps.values(), key=lambda j: j.addr):
            if jump.func_addr == start and not jump.resolved_targets:
                limitations.append(
                    f"the indirect jump at {self.rea_address(jump.addr):#x} was not resolved; "
                    "the code it reaches is missing"
                )
        outside = sorted(
            {
                target.addr
                for node in function.graph.nodes
                for target in function.graph.successors(node)
                if not (start <= target.addr < end)
            }
        )
        for target in outside:
            limitations.append(
                f"a branch to {self.rea_address(target):#x}, outside the procedure's region, "
                "was not followed"
            )
        began = time.monotonic()
        decompiler = self.decompile_checked(function, cfg, kb, labels)
        decompile_seconds = time.monotonic() - began
        for error in decompiler.errors:
            text = error.format() if hasattr(error, "format") else str(error)
            lines = [l for l in text.strip().splitlines() if l.strip() and l.strip() != "exception occurred"]
            limitations.append("angr reported: " + (lines[-1].strip() if lines else "an error"))
        codegen = decompiler.codegen
        if codegen is None or codegen.text is None:
            raise Refusal("decompile", "; ".join(limitations) or "angr produced no code")
        self.widen_returns(codegen)
        self.signed_constants(codegen, function)
        self.null_compares(codegen)
        self.parenthesize(codegen)
        if self.bias:
            self.unbias(codegen)
        text = codegen.text
        found = references(text, codegen, self.rea_address)
        sites = [site + self.bias for site in request.get("sites", [])]
        calls = list(zip(sites, request.get("targets", [])))
        text, found = self.add_unreached(text, found, function, start, end, limitations, calls)
        if self.bias:
            text = self.unbias_labels(text)
        text, found = self.name_cells(text, found)
        limitations.extend(self.dirty_lines(text))
        limitations.extend(unassigned_reads(text))
        import re

        for name in getattr(decompiler, "rea_merged", []):
            # angr names some variables again as it prints them: a name not in the text is not
            # given.
            shown = bool(name) and re.search(r"\b%s\b" % re.escape(name), text) is not None
            which = name if shown else "a variable"
            limitations.append(
                f"{which} holds values the machine code keeps apart at once (angr gave them one "
                f"variable): where the pseudo-code reads {'it' if not shown else name} after "
                "assigning it, it can read the newer value where the code reads the older"
            )
        limitations.extend(self.jumps_out(text))
        cap = request.get("max_text_bytes")
        encoded = text.encode("utf-8")
        if cap is not None and len(encoded) > cap:
            cut = encoded[:cap].decode("utf-8", "ignore")
            cut = cut[: cut.rfind("\n") + 1]
            kept = cut.count("\n")
            found = [r for r in found if r["line"] <= kept]
            limitations.append(
                f"the pseudo-code was cut after {kept} lines ({len(cut.encode('utf-8'))} of "
                f"{len(encoded)} bytes)"
            )
            text = cut
        return {
            "ok": True,
            "text": text,
            "references": found,
            "limitations": limitations,
            "cfg_seconds": round(cfg_seconds, 4),
            "decompile_seconds": round(decompile_seconds, 4),
        }

    def cfg(self, kb, regions, starts=None, data_references=True, progress=True):
        """angr's CFG of `regions` (`(start, end)` pairs) from `starts` (each region's start
        when not given), with progress lines unless `progress` is false."""
        return self.project.analyses.CFGFast(
            kb=kb,
            function_starts=starts if starts is not None else [low for low, _ in regions],
            regions=regions,
            normalize=True,
            data_references=data_references,
            cross_references=False,
            force_smart_scan=False,
            force_complete_scan=False,
            show_progressbar=False,
            progress_callback=REQUESTS.progress("cfg") if progress else None,
        )

    def callee_prototypes(self, kb, regions):
        """Gives each callee of the document that has no prototype the one angr's calling
        convention analysis finds in the callee's own code. Without it angr knows a callee
        outside the region by its address alone, and a call to it reads `classify()`, its
        arguments dropped. Imports have their library's prototypes instead. The callees are
        lifted in a knowledge base of their own: only their prototypes come back, not angr's
        view of whether they return, which a region rea cut short could make wrong."""
        wanted = [
            (low, high)
            for low, high in regions
            if low in kb.functions and low not in self.imports and kb.functions[low].prototype is None
        ]
        if not wanted:
            return
        REQUESTS.progress("cfg")(100.0, text=f"recovering the prototypes of {len(wanted)} callees")
        own = self.angr.KnowledgeBase(self.project, name="rea_callees")
        self.project.kb = own
        try:
            cfg = self.cfg(own, wanted, data_references=False)
            self.project.analyses.CompleteCallingConventions(
                kb=own,
                cfg=cfg.model,
                recover_variables=True,
                prioritize_func_addrs=[low for low, _ in wanted],
                skip_other_funcs=True,
            )
        except Exception:
            # (Cancelled is not an Exception: a cancel still stops the request.) A callee whose
            # convention angr cannot recover keeps reading as before.
            return
        finally:
            self.project.kb = kb
        for low, _ in wanted:
            found = own.functions.get_by_addr(low) if low in own.functions else None
            if found is None or found.prototype is None or found.calling_convention is None:
                continue
            callee = kb.functions[low]
            callee.calling_convention = found.calling_convention
            callee.prototype = found.prototype
            callee.prototype_source = found.prototype_source

    def decompile_checked(self, function, cfg, kb, labels):
        """angr's decompilation of `function`. When the first reads a variable it never assigns
        or merges two live values (see `find_merged_values`), again reading the values
        assignments hold (`reuse_assigned_values`), and for a lost value then again without
        expression folding; the first of these in no doubt is taken, else the first."""
        project = self.project

        def run(**options):
            # Variable recovery runs in a knowledge base of its own; global variables take their
            # names from its labels, so it gets rea's names too.
            variables = self.angr.KnowledgeBase(project, name="rea_variables")
            self._label(variables)
            self.relabel(variables, labels)
            del MERGED[:]
            decompiler = project.analyses.Decompiler(
                function,
                cfg=cfg.model,
                kb=kb,
                variable_kb=variables,
                progress_callback=REQUESTS.progress("decompile"),
                **options,
            )
            decompiler.rea_merged = merged_names(variables)
            return decompiler

        def merged_names(variables):
            names = []
            try:
                manager = variables.variables[function.addr]
                for representative in MERGED:
                    variable = manager._vvarid_to_variable.get(representative)
                    if variable is None:
                        continue
                    variable = manager.unified_variable(variable) or variable
                    if variable.name not in names:
                        names.append(variable.name)
            except Exception:  # noqa: BLE001 - an angr without these has no names to give
                return names
            return names

        def lost(decompiler):
            text = decompiler.codegen.text if decompiler.codegen is not None else None
            return bool(text) and bool(unassigned_reads(text))

        def doubtful(decompiler):
            return lost(decompiler) or bool(decompiler.rea_merged)

        def again(flag, value, how):
            REQUESTS.progress("decompile")(0.0, text=f"decompiling again {how}")
            kept, flag[0] = flag[0], value
            try:
                retried = run(use_cache=False)
            except Exception:
                return None
            finally:
                flag[0] = kept
            return retried if retried.codegen is not None and retried.codegen.text else None

        first = run()
        if not doubtful(first):
            return first
        # Reading assigned values again only where it is cheap: `/usr/bin/ls`'s `main` (16 s) is
        # in doubt, and a third run would make its first answer half as fast again.
        if sum(block.size for block in function.blocks) <= REUSE_BYTES:
            retried = again(REUSING, True, "reading the values assignments hold")
            if retried is not None and not doubtful(retried):
                return retried
        # Without folding only for a lost value: angr merges values then too (`collatz_steps`
        # lost an assignment outright, with nothing to say so).
        if not lost(first):
            return first
        retried = again(FOLDING, False, "without expression folding")
        if retried is not None and not lost(retried):
            return retried
        return first

    def library_prototype(self, callee):
        """Gives an import its library prototype, so its calls get the right arguments: angr's
        SimLibraries first (libc, Win32; angr strips the leading `_` of Mach-O names itself),
        then the few C++ runtime functions angr has none for. A prototype found is certain, not
        guessed: the decompiler then keeps its argument count instead of guessing one."""
        from angr.knowledge_plugins.functions.function import PrototypeSource

        # angr looks prototypes up by the import's own name (`strlen`, `_getpass`); the caller
        # names the callee as rea does afterwards.
        name = self.imports[callee.addr]
        if name.endswith("@plt"):
            name = name[: -len("@plt")]
        callee.name = name
        try:
            found = callee.find_declaration(ignore_binary_name=True)
        except Exception:
            found = False
        if not found:
            bare = name[1:] if name.startswith("__") and name[1:] in RUNTIME_PROTOTYPES else name
            declaration = RUNTIME_PROTOTYPES.get(bare)
            if declaration is None:
                return
            try:
                self.set_prototype(callee, self.angr.sim_type.parse_signature(declaration), PrototypeSource.SIMPROC)
            except Exception:
                return
            found = True
        if found:
            callee.prototype_source = PrototypeSource.SIMPROC

    def set_prototype(self, function, prototype, source):
        """Makes `prototype` the function's, with the architecture's calling convention."""
        from angr.calling_conventions import default_cc

        arch = self.project.arch
        function.prototype = prototype.with_arch(arch)
        function.prototype_source = source
        if function.calling_convention is None:
            cc = default_cc(arch.name, platform=None)
            if cc is not None:
                function.calling_convention = cc(arch)

    def apply_hints(self, kb, hints, limitations):
        """The analyst's annotations for this procedure, as rea sends them: names of procedures
        (callees print by them) and data, C types of the document, prototypes of the procedure
        and its callees. Returns the labels to give the variable knowledge base too. A
        declaration angr cannot use is a limitation, not a failure: the rest still applies."""
        from angr.knowledge_plugins.functions.function import PrototypeSource

        sim_type = self.angr.sim_type
        arch = self.project.arch
        types = self.parse_types(hints.get("types", []), limitations)
        labels = {}
        for entry in hints.get("data", []):
            address = entry["address"] + self.bias
            if entry.get("name"):
                labels[address] = entry["name"]
            if entry.get("type"):
                self.data_type(kb, entry, types, limitations)
        for entry in hints.get("procedures", []):
            address = entry["address"] + self.bias
            function = kb.functions.function(addr=address)
            if entry.get("name"):
                labels[address] = entry["name"]
                if function is not None:
                    function.name = entry["name"]
            if entry.get("prototype") and function is not None:
                try:
                    prototype = sim_type.parse_signature(entry["prototype"], predefined_types=types, arch=arch)
                except Exception as error:
                    limitations.append(
                        f"the analyst's prototype of {entry['address']:#x} was not used: {error}"
                    )
                    continue
                self.set_prototype(function, prototype, PrototypeSource.USER)
        self.relabel(kb, labels)
        return labels

    def data_type(self, kb, entry, types, limitations):
        """Applies the analyst's type of a data location where angr takes one: a table of
        function pointers (`op_fn[4]`) gives its element's prototype to every indirect call of
        the procedure in a block that reads the table, so the call shows its arguments. Other
        data types are said not to be applied."""
        from angr.calling_conventions import default_cc
        from angr.knowledge_plugins.callsite_prototypes import CallsitePrototypeKind

        sim_type = self.angr.sim_type
        arch = self.project.arch
        address = entry["address"] + self.bias
        try:
            kind = sim_type.parse_type(entry["type"], predefined_types=types, arch=arch)
        except Exception as error:
            limitations.append(f"the analyst's type of the data at {entry['address']:#x} was not used: {error}")
            return

        def resolved(t):
            while isinstance(t, sim_type.TypeRef):
                t = t.type
            return t

        element = resolved(kind)
        if isinstance(element, sim_type.SimTypeArray):
            element = resolved(element.elem_type)
        target = resolved(element.pts_to) if isinstance(element, sim_type.SimTypePointer) else None
        if not isinstance(target, sim_type.SimTypeFunction):
            limitations.append(
                f"the analyst's type of the data at {entry['address']:#x} is not given to angr "
                "(rea gives angr the types of tables of function pointers only)"
            )
            return
        size = kind.with_arch(arch).size
        end = address + (size // arch.byte_width if size else arch.bytes)
        cc_class = default_cc(arch.name, platform=None)
        if cc_class is None:
            return
        prototype = target.with_arch(arch)
        for function in list(kb.functions.values()):
            for block in function.blocks:
                try:
                    vex = block.vex
                except Exception:
                    continue
                # An indirect call: a call whose target is computed, not a constant.
                if vex.jumpkind != "Ijk_Call" or vex.next.tag == "Iex_Const":
                    continue
                constants = {c.value for c in vex.all_constants}
                if any(address <= c < end for c in constants):
                    # angr reads a manual prototype through the inferred kind: set both.
                    for manual in (True, False):
                        kb.callsite_prototypes.set_prototype(
                            block.addr, cc_class(arch), prototype, manual=manual, kind=CallsitePrototypeKind.INFERRED
                        )

    def parse_types(self, texts, limitations):
        """The document's C types as angr types. A type may name one given after it, so the
        texts are parsed in rounds until a round adds nothing; what never parses is said."""
        sim_type = self.angr.sim_type
        types = {}
        pending = list(texts)
        errors = {}
        while pending:
            left = []
            for text in pending:
                try:
                    types.update(sim_type.parse_file(text, predefined_types=dict(types), arch=self.project.arch)[1])
                except Exception as error:
                    errors[text] = error
                    left.append(text)
            if len(left) == len(pending):
                break
            pending = left
        for text in pending:
            limitations.append(f"the analyst's type {text.strip()[:80]!r} was not used: {errors[text]}")
        return types

    @staticmethod
    def relabel(kb, labels):
        """Puts `labels` (address -> name) over rea's own names in a knowledge base."""
        for address, name in labels.items():
            old = kb.labels._labels.get(address)
            if old is not None and kb.labels._reverse_labels.get(old) == address:
                del kb.labels._reverse_labels[old]
            kb.labels._labels[address] = name
            kb.labels._reverse_labels[name] = address

    @staticmethod
    def null_compares(codegen):
        """Keeps `x != 0` whole where its value is used. angr prints a comparison with zero C's
        short way (`x` for `x != 0`) wherever it stands, which is right only as a condition:
        `classify`'s `setne` result, `(unsigned char)(x != 0)`, read `(unsigned char)(x)`. Only
        comparisons in a condition (of an `if`, a loop, a `?:`, or under `&&`, `||`, `!`) keep
        the short form. A comparison of an operation with zero keeps its `== 0` everywhere."""
        from angr.analyses.decompiler.structured_codegen import c as cgen

        conditions = set()
        comparisons, negated = [], []
        for node in walk(codegen.cfunc, cgen.CConstruct):
            if isinstance(node, (cgen.CWhileLoop, cgen.CDoWhileLoop, cgen.CForLoop, cgen.CIfBreak)):
                conditions.add(id(node.condition))
            elif isinstance(node, cgen.CIfElse):
                conditions.update(id(condition) for condition, _ in node.condition_and_nodes)
            elif isinstance(node, cgen.CITE):
                conditions.add(id(node.cond))
            elif isinstance(node, cgen.CUnaryOp) and node.op == "Not":
                conditions.add(id(node.operand))
            elif isinstance(node, cgen.CBinaryOp):
                if node.op in ("LogicalAnd", "LogicalOr"):
                    conditions.update((id(node.lhs), id(node.rhs)))
                elif node.op == "CmpNE" and node._cstyle_null_cmp and node._has_const_null_rhs():
                    comparisons.append(node)
                elif (
                    node.op == "CmpEQ"
                    and node._cstyle_null_cmp
                    and node._has_const_null_rhs()
                    and isinstance(node.lhs, (cgen.CBinaryOp, cgen.CITE))
                ):
                    # angr prints `!` before the left side without parentheses: `flag + 5 == 0`
                    # read `!flag + 5`, which is always true.
                    negated.append(node)
        changed = bool(negated)
        for node in negated:
            node._cstyle_null_cmp = False
        for node in comparisons:
            if id(node) not in conditions:
                node._cstyle_null_cmp = False
                changed = True
        if changed:
            codegen.regenerate_text()

    @staticmethod
    def widen_returns(codegen):
        """A return type narrower than every value the function computes to return is widened
        to the narrowest of them. angr can type the result narrower than the register the code
        writes: `movsx rax, al` (`(long)(signed char)x`) under `int`, whose caller then reads
        -3 as 4294967293; `(a > b) - (a < b)` under `char`, -1 read as 255. A wider type keeps
        every bit the code computes. Constants and plain variables (angr often gives a register
        variable the register's whole width) do not count."""
        from angr.analyses.decompiler.structured_codegen import c as cgen
        from angr.sim_type import SimTypeChar, SimTypeInt

        def integral(ty):
            return isinstance(ty, (SimTypeInt, SimTypeChar)) and ty.size is not None

        functy = codegen.cfunc.functy
        returned = getattr(functy, "returnty", None)
        if not integral(returned):
            return
        widths = []
        for node in walk(codegen.cfunc, cgen.CConstruct):
            if not isinstance(node, cgen.CReturn) or node.retval is None:
                continue
            value = node.retval
            if isinstance(value, (cgen.CConstant, cgen.CVariable)):
                continue
            try:
                ty = value.type
            except Exception:  # noqa: BLE001 - a node angr cannot type does not count
                return
            if not integral(ty):
                return
            widths.append(ty.size)
        if not widths or min(widths) <= returned.size:
            return
        wider = codegen.default_simtype_from_bits(min(widths), bool(returned.signed))
        # A copy: the prototype angr holds for the function stays as it is.
        codegen.cfunc.functy = functy.copy()
        codegen.cfunc.functy.returnty = wider
        codegen.regenerate_text()

    @staticmethod
    def parenthesize(codegen):
        """Parentheses around a right operand that C would otherwise group to the left. angr
        brackets a right operand of lower precedence, and of equal precedence only under `-` and
        `/`: `a0 - a1 * (a0 / a1)` (AArch64's `sdiv` then `msub`) read `a0 - a1 * a0 / a1`, which
        C computes as `(a1 * a0) / a1`. It also ranks `%` above `*` and `/`. A right operand of
        equal precedence keeps its parentheses unless the operation is the same associative one
        (`a + (b + c)`)."""
        from types import SimpleNamespace

        from angr.analyses.decompiler.structured_codegen import c as cgen

        associative = {"Add", "Mul", "And", "Or", "Xor", "LogicalAnd", "LogicalOr"}

        precedence = cgen.CBinaryOp.op_precedence.fget

        def rank(node):
            # `%` groups with `*` and `/` in C.
            return precedence(SimpleNamespace(op="Mul")) if node.op == "Mod" else node.op_precedence

        changed = False
        for node in walk(codegen.cfunc, cgen.CConstruct):
            if not isinstance(node, cgen.CBinaryOp) or not isinstance(node.rhs, cgen.CBinaryOp):
                continue
            rhs = node.rhs
            if node._cstyle_null_cmp and node._has_const_null_rhs():
                continue
            angr_brackets = node.op_precedence > rhs.op_precedence - (1 if node.op in ("Sub", "Div") else 0)
            if angr_brackets or rank(node) < rank(rhs):
                continue
            if node.op == rhs.op and node.op in associative:
                continue
            node.rhs = parenthesized()(rhs, codegen=codegen)
            changed = True
        if changed:
            codegen.regenerate_text()

    @staticmethod
    def signed_constants(codegen, function):
        """Shows constants in the signedness of their type: angr prints an `int` -1 as
        4294967295 unless told the constant is negative. A constant is signed when its own type
        is, or when it is what a function of signed return type returns (directly, or through
        the variable it returns: angr types `classify`'s result register `unsigned int` even
        when the prototype says `int`)."""
        from angr.analyses.decompiler.structured_codegen.c import (
            CAssignment,
            CConstant,
            CConstruct,
            CReturn,
            CVariable,
        )
        from angr.sim_type import SimTypeInt

        nodes = walk(codegen.cfunc, CConstruct)
        returned = getattr(function.prototype, "returnty", None)
        signed_return = isinstance(returned, SimTypeInt) and returned.signed and returned.size
        returns = set()
        returned_constants = []
        if signed_return:
            for node in nodes:
                if isinstance(node, CReturn):
                    if isinstance(node.retval, CVariable):
                        returns.add(id(node.retval.variable))
                    elif isinstance(node.retval, CConstant):
                        returned_constants.append(node.retval)
            for node in nodes:
                if (
                    isinstance(node, CAssignment)
                    and isinstance(node.lhs, CVariable)
                    and id(node.lhs.variable) in returns
                    and isinstance(node.rhs, CConstant)
                ):
                    returned_constants.append(node.rhs)

        def shown(constant):
            """The number angr formats: the constant's reference value for its type, if any."""
            references = constant.reference_values or {}
            value = references.get(constant._type, constant.value) if constant._type is not None else constant.value
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        def sign(constant, size):
            """Formats the constant as the signed number of `size` bits it is. angr's negative
            format flips the sign of what it prints, so it must be off for a reference value that
            is already negative: angr sets it there, and a `switch` case -5 read `4294967291`."""
            value = shown(constant)
            if value is None or not size:
                return False
            wanted = 1 << (size - 1) <= value < 1 << size
            if value < 0:
                wanted = False
            if constant.fmt_neg != wanted:
                constant.fmt_neg = wanted
                return True
            return False

        changed = False
        for node in nodes:
            if isinstance(node, CConstant):
                kind = node._type
                if isinstance(kind, SimTypeInt) and kind.signed:
                    changed |= sign(node, kind.size)
        for constant in returned_constants:
            size = getattr(constant._type, "size", None) or returned.size
            if isinstance(constant._type, SimTypeInt) and size == returned.size:
                changed |= sign(constant, size)
        if changed:
            codegen.regenerate_text()

    def check(self, request):
        """Parses an analyst's C declaration as angr would when decompiling (pycparser through
        angr's parse functions), the document's types given as typedefs first. A declaration
        that does not parse is answered, not refused: where it failed, as a byte offset."""
        import re

        sim_type = self.angr.sim_type
        kind = request["kind"]
        text = request["text"]
        types = {}
        for other in request.get("types", []):
            try:
                types.update(sim_type.parse_file(other, predefined_types=dict(types))[1])
            except Exception:
                continue
        body = text.rstrip()
        if kind == "data-type":
            source = body
        else:
            source = body if body.endswith(";") or body.endswith("}") else body + ";"
        try:
            if kind == "prototype":
                parsed, _ = sim_type.parse_file(source, predefined_types=types)
                functions = [t for t in parsed.values() if isinstance(t, sim_type.SimTypeFunction)]
                if len(parsed) != 1 or not functions:
                    return {"ok": True, "valid": False, "position": 0, "problem": "not one function declaration"}
                return {"ok": True, "valid": True, "name": next(iter(parsed))}
            if kind == "data-type":
                sim_type.parse_type(source, predefined_types=types)
            else:
                sim_type.parse_file(source, predefined_types=types)
            return {"ok": True, "valid": True}
        except Exception as error:
            message = str(error)
            position = 0
            found = re.search(r":(\d+):(\d+):", message)
            if found:
                line, column = int(found.group(1)), int(found.group(2))
                lines = source.split("\n")
                position = sum(len(l.encode("utf-8")) + 1 for l in lines[: line - 1]) + max(column - 1, 0)
                position = min(position, len(text.encode("utf-8")))
                message = message[found.end():].strip()
            return {"ok": True, "valid": False, "position": position, "problem": message or type(error).__name__}

    def dirty_lines(self, text):
        """The statements angr could not put in C (it prints them as `[D] ...`), and the
        conditions it left as VEX's flag helpers (`_ccall(…)`, `arm64g_calculate_condition(…)`:
        AArch64's conditional compare, `ccmp`), which compute a comparison the text does not
        show and do not compile."""
        import re

        found = []
        for number, line in enumerate(text.split("\n"), start=1):
            helper = re.search(r"\b(_ccall|[a-z0-9]+g_calculate_[a-z_]+)\(", line)
            if helper:
                found.append(
                    f"line {number}: `{helper.group(1)}(…)` is VEX's helper for the processor's "
                    "flags, which angr did not turn into the comparison it computes; read that "
                    "condition in procedure_assembly"
                )
            if "[D]" not in line:
                continue
            undecoded = re.search(r"Ijk_NoDecode at address (\d+)", line)
            if undecoded:
                address = self.rea_address(int(undecoded.group(1)))
                found.append(
                    f"line {number}: the bytes at {address:#x} did not decode; what follows them "
                    "in that path is missing"
                )
            else:
                found.append(f"line {number}: angr could not put a statement in C: {line.strip()}")
        return found

    def unbias(self, codegen):
        """Writes addresses the code shows in rea's numbering: numbers inside the mapped range
        and the default names of globals (`g_<address>`)."""
        from angr.analyses.decompiler.structured_codegen.c import CConstant
        from angr.sim_variable import SimMemoryVariable, SimStackVariable

        low, high = self.low + self.bias, self.high + self.bias
        changed = False
        for _, element in codegen.map_pos_to_node.items():
            node = element.obj
            if isinstance(node, CConstant) and isinstance(node.value, int) and low <= node.value < high:
                node.value -= self.bias
                changed = True
        for variable in list(getattr(codegen.cfunc, "variables_in_use", {}) or {}):
            if (
                isinstance(variable, SimMemoryVariable)
                and not isinstance(variable, SimStackVariable)
                and isinstance(variable.addr, int)
                and variable.name == f"g_{variable.addr:x}"
            ):
                variable.name = f"g_{self.rea_address(variable.addr):x}"
                changed = True
        for variable in list(getattr(codegen, "externs", None) or []):
            if (
                isinstance(variable, SimMemoryVariable)
                and isinstance(variable.addr, int)
                and variable.name == f"g_{variable.addr:x}"
            ):
                variable.name = f"g_{self.rea_address(variable.addr):x}"
                changed = True
        if changed:
            codegen.regenerate_text()


    def name_cells(self, text, found):
        """Writes a load through an import's extern cell (`*((long long *)0x440020)`, what angr
        shows for `stderr` reached through its GOT slot) as the import's name, and the bare cell
        as its address, with a data reference to the slot. Only characters inside lines change."""
        import re

        if not self.cells:
            return text, found
        lines = text.split("\n")
        for number, line in enumerate(lines, start=1):
            if "0x" not in line:
                continue

            def load(match):
                cell = int(match.group(1), 16)
                if cell not in self.cells:
                    return match.group(0)
                name = self.imports[cell]
                found.append({"kind": "data", "address": self.cells[cell], "line": number, "text": name})
                return name

            def bare(match):
                cell = int(match.group(1), 16)
                if cell not in self.cells:
                    return match.group(0)
                name = "&" + self.imports[cell]
                found.append({"kind": "data", "address": self.cells[cell], "line": number, "text": name})
                return name

            line = re.sub(r"\*\(\([\w ]+\*\)(0x[0-9a-f]+)\)", load, line)
            lines[number - 1] = re.sub(r"(?<![\w\"])(0x[0-9a-f]+)\b", bare, line)
        return "\n".join(lines), found

    # Most pieces of a region angr's CFG does not reach that are decompiled on their own.
    UNREACHED_PARTS = 16

    def unreached_starts(self, covered, start, end):
        """The stretches `(start, end)` of `[start, end)` outside the blocks angr lifted
        (`covered`, biased `(address, end)` pairs), each starting past the padding compilers put
        between pieces."""
        padding = {0x90, 0xCC, 0x00} if self.project.arch.name == "AMD64" else {0x00}
        memory = self.project.loader.memory
        starts = []
        cursor = start
        for block_start, block_end in sorted(covered) + [(end, end)]:
            gap = cursor
            while gap < min(block_start, end):
                byte = memory.load(gap, 1)[0]
                if byte not in padding:
                    break
                gap += 1
            if self.project.arch.name != "AMD64":
                gap = (gap + 3) // 4 * 4
                while gap + 4 <= block_start and memory.load(gap, 4) in (b"\x1f\x20\x03\xd5", b"\0\0\0\0"):
                    gap += 4
            if gap < block_start and gap < end:
                starts.append((gap, min(block_start, end)))
            cursor = max(cursor, block_end)
        return starts

    def add_unreached(self, text, found, function, start, end, limitations, calls):
        """Decompiles, each on its own, the code of the region angr's CFG of the procedure did
        not reach from its entry (cleanup code that runs while an exception unwinds, reached
        only through the unwind tables, or code after a call angr takes for one that does not
        return), and appends it after the procedure, so every call rea decodes in the region is
        shown. Only stretches holding one of rea's direct call sites (`calls`: biased site and
        rea's target) are decompiled: a stretch of data in the code (a jump table) holds none. A
        block angr lifted whose call its code still does not show (structuring dropped it, after
        a jump it could not resolve) is decompiled on its own too. Returns the text and
        references with the parts added."""
        angr = self.angr
        project = self.project
        covered = [(b.addr, b.addr + b.size) for b in function.blocks if b.size]
        lifted = list(covered)
        sites = [site for site, _ in calls]
        done = set()
        for _ in range(self.UNREACHED_PARTS):
            def uncovered(site):
                return not any(a <= site < b for a, b in covered)

            pending = [
                a
                for a, b in self.unreached_starts(covered, start, end)
                if a not in done and any(a <= site < b and uncovered(site) for site in sites)
            ]
            if not pending:
                shown = {r["address"] for r in found if r["kind"] in ("call", "function")}
                pending = [
                    a
                    for a, b in lifted
                    if a not in done
                    and any(a <= site < b and target not in shown for site, target in calls)
                ]
            if not pending:
                break
            part = pending[0]
            done.add(part)
            kb = angr.KnowledgeBase(project, name="rea_part")
            project.kb = kb
            self._label(kb)
            try:
                cfg = self.cfg(kb, [(start, end)], starts=[part], progress=False)
            except Exception:
                continue
            if part not in kb.functions:
                continue
            piece = kb.functions[part]
            blocks = [(b.addr, b.addr + b.size) for b in piece.blocks if b.size]
            if not blocks:
                continue
            covered.extend(blocks)
            self.name_callees(kb, part)
            piece.name = f"sub_{self.rea_address(part):x}_unreached"
            variables = angr.KnowledgeBase(project, name="rea_part_variables")
            self._label(variables)
            try:
                decompiler = project.analyses.Decompiler(piece, cfg=cfg.model, kb=kb, variable_kb=variables)
            except Exception:
                continue
            codegen = decompiler.codegen
            if codegen is None or codegen.text is None:
                continue
            if self.bias:
                self.unbias(codegen)
            left_out = any(a == part for a, _ in lifted)
            if left_out:
                why = "that angr lifted but its code above leaves out"
                reason = (
                    "is lifted by angr but left out of its code of the procedure (structuring "
                    "stops at a jump it could not resolve)"
                )
            else:
                why = (
                    "that angr's CFG does not reach from its entry (such as cleanup run while an "
                    "exception unwinds)"
                )
                reason = (
                    "is not reached from the procedure's entry in angr's CFG (cleanup code run "
                    "while an exception unwinds, or code after a call angr takes for one that "
                    "does not return)"
                )
            header = f"/* {self.rea_address(part):#x}: code of this procedure {why}, decompiled on its own */\n"
            base = text.rstrip("\n") + "\n\n" + header
            offset = base.count("\n")
            first = offset + 1
            for reference in references(codegen.text, codegen, self.rea_address):
                reference["line"] += offset
                found.append(reference)
            text = base + codegen.text
            last = text.rstrip("\n").count("\n") + 1
            limitations.append(
                f"lines {first}-{last}: the code at {self.rea_address(part):#x} {reason}; it is "
                "decompiled on its own"
            )
        return text, found

    def name_callees(self, kb, start):
        """rea's names, and angr's library prototypes for imports, for the callees of a piece
        decompiled on its own."""
        for callee in list(kb.functions.values()):
            if callee.addr == start:
                continue
            imported = self.imports.get(callee.addr)
            if imported is not None:
                callee.name = imported
                try:
                    callee.find_declaration(ignore_binary_name=True)
                except Exception:
                    pass
            if callee.addr in self.names:
                callee.name = self.names[callee.addr]
            elif callee.is_default_name:
                callee.name = f"sub_{self.rea_address(callee.addr):x}"

    def unbias_labels(self, text):
        """Writes goto labels (`LABEL_0x4048c8`, named by the biased address of their block) in
        rea's numbering. Only characters inside lines change, so reference lines stay right."""
        import re

        low, high = self.low + self.bias, self.high + self.bias

        def rewrite(match):
            address = int(match.group(2), 16)
            if low <= address < high:
                address -= self.bias
            return f"LABEL_{match.group(1) or ''}{address:x}"

        # angr writes a label's own line as `LABEL_4054f8:` and a jump out of the function as
        # `goto LABEL_0x4048c8;`.
        return re.sub(r"\bLABEL_(0x)?([0-9a-f]+)\b", rewrite, text)

    @staticmethod
    def jumps_out(text):
        """Gotos whose label the code never defines: jumps out of the function angr built."""
        import re

        defined = set(re.findall(r"^\s*(LABEL_\w+):", text, re.MULTILINE))
        found = []
        for number, line in enumerate(text.split("\n"), start=1):
            for label in re.findall(r"\bgoto (LABEL_\w+);", line):
                if label not in defined:
                    found.append(
                        f"line {number}: `goto {label}` jumps to code that the output does not "
                        "show"
                    )
        return found


def walk(root, construct):
    """Every node of angr's C tree under `root` (each once), found through the slots of its
    classes: `construct` is angr's `CConstruct`."""
    nodes = []
    seen = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        for cls in type(node).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                value = getattr(node, slot, None)
                items = value if isinstance(value, (list, tuple)) else [value]
                for item in items:
                    parts = item if isinstance(item, tuple) else (item,)
                    stack.extend(p for p in parts if isinstance(p, construct))
    return nodes


def set_platform(project, platform):
    """A blob has no operating system, so angr takes the System V convention; a PE document's
    code follows Microsoft's (arguments in rcx, rdx, r8, r9), which angr picks by this name."""
    if platform == "windows" and project.simos is not None:
        project.simos.name = "Win32"


def references(text, codegen, rea_address):
    """Calls, function pointers, strings and globals the code shows, with the line each is on."""
    from angr.analyses.decompiler.structured_codegen.c import CConstant, CFunctionCall, CVariable
    from angr.knowledge_plugins.cfg.memory_data import MemoryDataSort
    from angr.knowledge_plugins.functions import Function
    from angr.sim_variable import SimMemoryVariable, SimStackVariable

    line_starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            line_starts.append(index + 1)

    found = []
    seen = set()

    def add(kind, address, position, shown):
        if not isinstance(address, int):
            return
        address = rea_address(address)
        if address < 0:
            return
        line = bisect.bisect_right(line_starts, position)
        key = (kind, address, line)
        if key not in seen:
            seen.add(key)
            found.append({"kind": kind, "address": address, "line": line, "text": shown})

    for _, element in codegen.map_pos_to_node.items():
        node = element.obj
        shown = text[element.start : element.start + element.length]
        if isinstance(node, CFunctionCall):
            callee = node.callee_func
            address = callee.addr if callee is not None else node.callee_target
            add("call", address, element.start, shown)
        elif isinstance(node, CConstant):
            values = node.reference_values if isinstance(node.reference_values, dict) else {}
            for value in values.values():
                if isinstance(value, Function):
                    add("function", value.addr, element.start, shown)
                elif getattr(value, "sort", None) == MemoryDataSort.String:
                    add("string", value.addr, element.start, shown)
                elif hasattr(value, "addr"):
                    add("data", value.addr, element.start, shown)
        elif isinstance(node, CVariable):
            variable = node.variable
            if isinstance(variable, SimMemoryVariable) and not isinstance(variable, SimStackVariable):
                add("data", getattr(variable, "addr", None), element.start, shown)
    found.sort(key=lambda r: (r["line"], r["kind"], r["address"]))
    return found


def main():
    # The protocol keeps the real stdout; everything else printed in this process (angr's
    # logging, stray prints) goes to stderr, which rea keeps only for error messages.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    threading.Thread(target=watch_parent, daemon=True).start()

    def send(message):
        text = json.dumps(message, separators=(",", ":")) + "\n"
        REQUESTS.sending = True
        try:
            replies.write(text)
            replies.flush()
        finally:
            REQUESTS.sending = False

    REQUESTS.send = send
    signal.signal(signal.SIGINT, REQUESTS.interrupt)

    import logging

    logging.disable(logging.CRITICAL)
    import angr
    import archinfo

    version = angr.__version__
    if not isinstance(version, str):
        version = ".".join(str(part) for part in version)
    send({"event": "ready", "protocol": PROTOCOL, "angr": version, "python": platform.python_version()})
    correct_signedness(angr)
    rewrite_arm64_conditions(angr)
    keep_operations(angr)
    keep_negative_offsets(angr)
    offset_void_in_bytes(angr)
    suffix_unsigned_constants(angr)
    walk_comma_expressions(angr)
    fold_when_asked(angr)
    fit_integers_to_variables(angr)
    watch_leaving_ssa(angr)
    keep_jumps_inside(angr)
    worker = Worker(angr, archinfo)
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        send(serve(worker, line))


CANCELLED = {"ok": False, "error": {"kind": "cancelled", "message": "stopped at rea's request"}}


def serve(worker, line):
    """The reply to one request line. The request is `busy` only inside the inner `try`, and
    the outer one catches the cancellation wherever in it the SIGINT lands, so no SIGINT ends
    the worker. A result finished after one (angr swallowed the cancellation) is dropped: a
    pass may have been cut short."""
    REQUESTS.cancelled, REQUESTS.last = False, (None, -1.0, 0.0)
    try:
        try:
            REQUESTS.busy = True
            request = json.loads(line)
            op = request.get("op")
            if op == "load":
                reply = worker.load(request)
            elif op == "decompile":
                reply = worker.decompile(request)
            elif op == "check":
                reply = worker.check(request)
            else:
                raise Refusal("bad-request", f"unknown op {op!r}")
        except Refusal as refusal:
            reply = {"ok": False, "error": {"kind": refusal.kind, "message": refusal.message}}
        except MemoryError:
            reply = {"ok": False, "error": {"kind": "memory", "message": "angr ran out of memory"}}
        except Exception as error:  # angr's own failures: report them and keep serving
            detail = traceback.format_exc().strip().splitlines()
            reply = {
                "ok": False,
                "error": {"kind": "angr", "message": f"{type(error).__name__}: {error}", "trace": detail[-12:]},
            }
        finally:
            REQUESTS.busy = False
    except Cancelled:
        REQUESTS.busy = False
        return CANCELLED
    if REQUESTS.cancelled and reply.get("ok"):
        return CANCELLED
    return reply

if __name__ == "__main__":
    main()
