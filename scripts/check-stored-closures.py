#!/usr/bin/env python3
"""Refuses a function type kept inside a lock: `Mutex<(@Sendable () -> Void)?>` and its kin.

`Mutex.withLock` lends its value `inout` at the generic abstraction, so a closure read or written through it is
reabstracted on the way in and again on the way back; Swift 6.3.1 keeps both thunks and stores the wrapped
function, so each call makes the next one deeper (couchlite's 6,361st database event overflowed a thread's stack).
Keep such a callback in `Callbacks.CallbackSlot`, which holds it in a class (a reference is never reabstracted).

What is refused: an instantiation of a lock or live-value type (`Mutex`, `LiveValue`, `Atomic`) whose type argument
is, at its top level, a function type, an optional one, or a tuple with one; type aliases to function types declared
in the tree count as function types. A function type inside a struct, a class, an array or a dictionary is fine:
those store it at its own abstraction. Lines in Sources/Callbacks (the one place allowed) and the control test
that shows the growth (a line marked `check-stored-closures: control`) are exempt. Prints nothing and exits 0 when none is found;
otherwise names each (file:line) on stderr and exits 1.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
WRAPPERS = ("Mutex", "LiveValue", "Atomic")
EXEMPT_DIRS = (ROOT / "Sources/Callbacks",)
EXEMPT_MARK = "check-stored-closures: control"


def generic_argument(text, start):
    """The text between the `<` at `start` and its matching `>`, skipping the `>` of `->`; None if unbalanced."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == "<":
            depth += 1
        elif c == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
        elif c == "\n":
            return None
        i += 1
    return None


def top_level(argument):
    """The argument with everything nested inside [...] and Name<...> removed: what is stored as the value."""
    out, depth, i = [], 0, 0
    while i < len(argument):
        c = argument[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "<" and depth == 0:
            inner = generic_argument(argument, i)
            i += len(inner) + 2 if inner is not None else 1
            continue
        elif depth == 0:
            out.append(c)
        i += 1
    return "".join(out)


def main():
    files = [p for p in sorted((ROOT / "Sources").rglob("*.swift")) + sorted((ROOT / "Tests").rglob("*.swift"))]
    texts = {p: p.read_text(encoding="utf-8") for p in files}
    aliases = set()
    for text in texts.values():
        for match in re.finditer(r"typealias\s+(\w+)\s*=\s*([^\n]+)", text):
            if "->" in top_level(match.group(2)):
                aliases.add(match.group(1))
    alias_pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(aliases))) + r")\b") if aliases else None
    problems = []
    wrapper = re.compile(r"\b(" + "|".join(WRAPPERS) + r")<")
    for path, text in texts.items():
        if any(path.is_relative_to(d) for d in EXEMPT_DIRS):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if EXEMPT_MARK in line or line.lstrip().startswith("//"):
                continue
            for match in wrapper.finditer(line):
                argument = generic_argument(line, match.end() - 1)
                if argument is None:
                    continue
                stored = top_level(argument)
                if "->" in stored or (alias_pattern and alias_pattern.search(stored)):
                    problems.append(
                        f"{path.relative_to(ROOT)}:{number}: {match.group(1)}<{argument}> keeps a function type in a "
                        "lock: every call through withLock wraps it deeper; use Callbacks.CallbackSlot")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
