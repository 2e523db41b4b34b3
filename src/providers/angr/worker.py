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
End of stdin ends the worker. Anything angr prints goes to stderr: stdout carries only replies.
"""

import bisect
import io
import json
import os
import platform
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
        began = time.monotonic()
        cfg = project.analyses.CFGFast(
            kb=kb,
            function_starts=[start],
            regions=[(start, end)],
            normalize=True,
            data_references=True,
            cross_references=False,
            force_smart_scan=False,
            force_complete_scan=False,
            show_progressbar=False,
        )
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
        # Variable recovery runs in a knowledge base of its own; global variables take their
        # names from its labels, so it gets rea's names too.
        variables = angr.KnowledgeBase(project, name="rea_variables")
        self._label(variables)
        self.relabel(variables, labels)
        began = time.monotonic()
        decompiler = project.analyses.Decompiler(function, cfg=cfg.model, kb=kb, variable_kb=variables)
        decompile_seconds = time.monotonic() - began
        for error in decompiler.errors:
            text = error.format() if hasattr(error, "format") else str(error)
            lines = [l for l in text.strip().splitlines() if l.strip() and l.strip() != "exception occurred"]
            limitations.append("angr reported: " + (lines[-1].strip() if lines else "an error"))
        codegen = decompiler.codegen
        if codegen is None or codegen.text is None:
            raise Refusal("decompile", "; ".join(limitations) or "angr produced no code")
        self.signed_constants(codegen, function)
        if self.bias:
            self.unbias(codegen)
        text = codegen.text
        found = references(text, codegen, self.rea_address)
        if self.bias:
            text = self.unbias_labels(text)
        limitations.extend(self.dirty_lines(text))
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

        nodes = []
        seen = set()
        stack = [codegen.cfunc]
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
                        stack.extend(p for p in parts if isinstance(p, CConstruct))
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

        def negative(constant, size):
            value = constant.value
            return (
                isinstance(value, int)
                and not isinstance(value, bool)
                and size
                and 1 << (size - 1) <= value < 1 << size
                and not constant.fmt_neg
            )

        changed = False
        for node in nodes:
            if isinstance(node, CConstant):
                kind = node._type
                if isinstance(kind, SimTypeInt) and kind.signed and negative(node, kind.size):
                    node.fmt_neg = True
                    changed = True
        for constant in returned_constants:
            size = getattr(constant._type, "size", None) or returned.size
            if isinstance(constant._type, SimTypeInt) and size == returned.size and negative(constant, size):
                constant.fmt_neg = True
                changed = True
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
        """The statements angr could not put in C (it prints them as `[D] ...`)."""
        import re

        found = []
        for number, line in enumerate(text.split("\n"), start=1):
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
        replies.write(json.dumps(message, separators=(",", ":")) + "\n")
        replies.flush()

    import logging

    logging.disable(logging.CRITICAL)
    import angr
    import archinfo

    version = angr.__version__
    if not isinstance(version, str):
        version = ".".join(str(part) for part in version)
    send({"event": "ready", "protocol": PROTOCOL, "angr": version, "python": platform.python_version()})
    worker = Worker(angr, archinfo)
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            continue
        try:
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
        send(reply)


if __name__ == "__main__":
    main()
