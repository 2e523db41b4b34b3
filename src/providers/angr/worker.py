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
  {"op": "decompile", "start": ..., "end": ..., "max_text_bytes": ...}
                                                          ->  {"ok": true, "text": ..., ...}
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
            imported = self.imports.get(callee.addr)
            if imported is not None:
                # angr looks prototypes up by the import's own name (`strlen`, `_getpass`).
                callee.name = imported
                try:
                    callee.find_declaration(ignore_binary_name=True)
                except Exception:
                    pass
            if callee.addr in self.names:
                callee.name = self.names[callee.addr]
            elif callee.is_default_name:
                callee.name = f"sub_{self.rea_address(callee.addr):x}"
        if start in self.names:
            function.name = self.names[start]
        elif function.is_default_name:
            function.name = f"sub_{self.rea_address(start):x}"
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
                cfg = project.analyses.CFGFast(
                    kb=kb,
                    function_starts=[part],
                    regions=[(start, end)],
                    normalize=True,
                    data_references=True,
                    cross_references=False,
                    force_smart_scan=False,
                    force_complete_scan=False,
                    show_progressbar=False,
                )
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
