"""Checks that the Swift and Kotlin layers uniffi generated from tenure-uniffi have the same shape.

No Swift toolchain runs on this machine kind, so the Swift bindings are only generated; this
compares them with the Kotlin ones (which the Kotlin tests exercise): the same objects with the
same constructors and methods (names, parameter names, async or not), the same records with the
same fields, the same enums (a variant's fields too) and error variants with the same fields. Prints what differs and
exits 1 if anything does.

Usage: python3 check_shape.py GENERATED_KOTLIN.kt GENERATED_SWIFT.swift
"""

import re
import sys


def lower_first(name):
    return name[:1].lower() + name[1:]


def params(text):
    """Parameter names of a parameter list, in order."""
    names = []
    for part in re.split(r",(?![^<(]*[>)])", text):
        part = part.strip().strip("`")
        if part:
            names.append(part.split(":")[0].strip().strip("`"))
    return tuple(names)


def kotlin_shape(text):
    shape = {}
    for name, body in re.findall(r"^public interface (\w+)Interface \{\n(.*?)^\}", text, re.M | re.S):
        methods = re.findall(r"^    (suspend )?fun `(\w+)`\((.*?)\)", body, re.M)
        shape[f"object {name}"] = {(m, params(p), bool(s)) for s, m, p in methods}
    # Constructors: the primary one, and the companion's functions returning the object.
    for name in re.findall(r"^open class (\w+): Disposable", text, re.M):
        block = re.search(rf"^open class {name}: .*?^public object FfiConverterType{name}\b", text, re.M | re.S).group(0)
        ctors = set()
        primary = re.search(r"^    constructor\((`[^)]*)\) :\n        this\(UniffiWithHandle", block, re.M)
        if primary:
            ctors.add(("init", params(primary.group(1)), False))
        for s, m, p in re.findall(rf"(suspend )?fun `(\w+)`\((.*?)\)\s*:\s*{name}\b", block):
            ctors.add((m, params(p), bool(s)))
        shape[f"constructors {name}"] = ctors
    for name, body in re.findall(r"^data class (\w+) \(\n(.*?)^\)", text, re.M | re.S):
        shape[f"record {name}"] = set(re.findall(r"va[rl] `(\w+)`", body))
    for name, body in re.findall(r"^enum class (\w+)\s*(?:\(.*?\))?\s*\{\n(.*?)^\}", text, re.M | re.S):
        shape[f"enum {name}"] = {lower_first(c.title().replace("_", "")) for c in re.findall(r"^    ([A-Z_]+)[,;]", body, re.M)}
    # Enums whose variants carry fields: a sealed class of data classes.
    for name, body in re.findall(r"^sealed class (\w+) \{\n(.*?)^\}", text, re.M | re.S):
        variants = re.findall(rf"^    data class (\w+)\(\n(.*?)\) : {name}\(\)", body, re.M | re.S)
        shape[f"enum {name}"] = {(lower_first(v), tuple(re.findall(r"val `(\w+)`", f))) for v, f in variants}
    for name, body in re.findall(r"^sealed class (\w+)Exception: kotlin.Exception\(\) \{\n(.*?)^    companion object", text, re.M | re.S):
        variants = re.findall(r"^    class (\w+)\(\n(.*?)\) : ", body, re.M | re.S)
        shape[f"error {name}"] = {(v, tuple(re.findall(r"val `(\w+)`", f))) for v, f in variants}
    for name, body in re.findall(r"^public interface (\w+) \{\n(.*?)^    companion object", text, re.M | re.S):
        if name.endswith("Interface"):
            continue
        shape[f"callback {name}"] = {(m, params(p), False) for m, p in re.findall(r"fun `(\w+)`\((.*?)\)", body)}
    return shape


def swift_shape(text):
    shape = {}
    for name, body in re.findall(r"^public protocol (\w+)Protocol: AnyObject, Sendable \{\n(.*?)^\}", text, re.M | re.S):
        methods = re.findall(r"^    func (\w+)\((.*?)\)\s*(async)?", body, re.M)
        shape[f"object {name}"] = {(m, params(p), bool(a)) for m, p, a in methods}
    for name in re.findall(r"^open class (\w+): \w+Protocol", text, re.M):
        block = re.search(rf"^open class {name}: .*?^public struct FfiConverterType{name}\b", text, re.M | re.S).group(0)
        ctors = {("init", params(p), False) for p in re.findall(r"^public convenience init\((.*?)\)", block, re.M)}
        for m, p, a in re.findall(rf"^public static func `?(\w+)`?\((.*?)\)\s*(async)?[^\n]*-> {name}\b", block, re.M):
            ctors.add((m, params(p), bool(a)))
        shape[f"constructors {name}"] = ctors
    for name, body in re.findall(r"^public struct (\w+): Equatable, Hashable \{\n(.*?)^\}", text, re.M | re.S):
        shape[f"record {name}"] = set(re.findall(r"^    public var (\w+):", body, re.M))
    for name, body in re.findall(r"^public enum (\w+): Equatable, Hashable \{\n(.*?)^\}", text, re.M | re.S):
        fielded = re.findall(r"^    case (\w+)\((.*?)\n\s*\)", body, re.M | re.S)
        if fielded:
            shape[f"enum {name}"] = {(v, tuple(re.findall(r"(\w+): ", f))) for v, f in fielded}
        else:
            shape[f"enum {name}"] = set(re.findall(r"^    case (\w+)$", body, re.M))
    for name, body in re.findall(r"^public (?:indirect )?\n?enum (\w+)Error: Swift\.Error[^{]*\{\n(.*?)^\}", text, re.M | re.S):
        variants = re.findall(r"^    case (\w+)\((.*?)\n\s*\)", body, re.M | re.S)
        shape[f"error {name}"] = {(v, tuple(re.findall(r"(\w+): ", f))) for v, f in variants}
    for name, body in re.findall(r"^public protocol (\w+): AnyObject, Sendable \{\n(.*?)^\}", text, re.M | re.S):
        if name.endswith("Protocol"):
            continue
        shape[f"callback {name}"] = {(m, params(p), False) for m, p in re.findall(r"func (\w+)\((.*?)\)", body)}
    return shape


def main():
    kotlin = kotlin_shape(open(sys.argv[1]).read())
    swift = swift_shape(open(sys.argv[2]).read())
    differ = False
    for item in sorted(set(kotlin) | set(swift)):
        k, s = kotlin.get(item), swift.get(item)
        if k != s:
            differ = True
            print(f"{item}: kotlin {sorted(k) if k is not None else 'missing'}")
            print(f"{' ' * len(item)}  swift  {sorted(s) if s is not None else 'missing'}")
    kinds = {}
    for item, members in kotlin.items():
        kind = item.split()[0]
        kinds[kind] = kinds.get(kind, 0) + 1
        kinds[kind + " members"] = kinds.get(kind + " members", 0) + len(members)
    print("swift and kotlin: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    if not kotlin or differ:
        print("the generated Swift and Kotlin APIs differ in shape" if differ else "nothing was read")
        sys.exit(1)
    print("the generated Swift API has the Kotlin one's shape")


if __name__ == "__main__":
    main()
