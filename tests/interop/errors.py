"""One cross-binding error test: every code of the core's error table, raised through the Python,
Node and JVM packages, must arrive as the table's class (with the language's suffix), with the
table's chain of parents, the builtin Python bases the reference gives it, the core's message, its
code, and exactly the class's fields with the example's values.

The core makes the examples (`tenure_core::Error::examples`); each package raises them through the
path every failure takes (`_raise_error_example`, `_raiseErrorExample`, `ErrorTable.raiseExample`),
and this script compares what a user of each language sees. Prints one line per language and code
checked; exits 1 listing every difference.

Usage: PYTHON_WITH_TENURE tests/interop/errors.py NODE_PATH KOTLIN_CLASSPATH
(NODE_PATH: a node_modules holding the npm package; KOTLIN_CLASSPATH: the JVM package and its
test programs, as scripts/test-kotlin.sh --build prints it.)
"""

import builtins
import json
import os
import subprocess
import sys

import tenure
import tenure.errors
from tenure import _tenure

EXAMPLE = {"name": "orders", "timeout": 1.5, "field": "lease_duration", "store": "STORE_UNAVAILABLE", "reason": "lost"}
SUFFIX = {"python": "Error", "node": "Error", "jvm": "Exception"}

NODE = r"""
const tenure = require('tenure');
for (const code of process.argv.slice(1)) {
  let e;
  try { tenure._raiseErrorExample(code); } catch (error) { e = error; }
  if (e === undefined) throw new Error(`${code} was not raised`);
  const chain = [];
  for (let p = Object.getPrototypeOf(e); p && p !== Error.prototype; p = Object.getPrototypeOf(p)) chain.push(p.constructor.name);
  const fields = {};
  if (e.lockName !== undefined) fields.name = e.lockName;
  if (e.timeoutMs !== undefined) fields.timeout = e.timeoutMs / 1000;
  if (e.field !== undefined) fields.field = e.field;
  if (e.cause !== undefined) fields.store = e.cause.code;
  if (e.reason !== undefined) fields.reason = e.reason;
  console.log(JSON.stringify({ code, own_code: e.code, class: e.constructor.name, chain, message: e.message, fields }));
}
"""


def python_sees(code):
    try:
        _tenure._raise_error_example(code)
    except BaseException as e:  # noqa: BLE001 - every class is checked, EventLoopDeadlockError too
        ours = {c for c in vars(tenure.errors).values() if isinstance(c, type)}
        fields = {k: getattr(e, k) for k in ("name", "timeout", "field", "reason") if getattr(e, k, None) is not None}
        if e.__cause__ is not None:
            fields["store"] = getattr(e.__cause__, "code", repr(e.__cause__))
        return {
            "code": code,
            "own_code": getattr(e, "code", None),
            "class": type(e).__name__,
            # (grelmicro's private `_BackendCallError` is not a class of the table)
            "chain": [c.__name__ for c in type(e).__mro__ if c in ours and not c.__name__.startswith("_")],
            "message": str(e),
            "fields": fields,
            "error": e,
        }
    raise AssertionError(f"{code} was not raised")


def lines(command, **kwargs):
    out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=300, **kwargs)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main():
    node_path, kotlin_cp = sys.argv[1], sys.argv[2]
    table = {row["class"]: row for row in json.loads(_tenure._error_table())}
    coded = {row["code"]: row for row in table.values() if row["code"]}
    for language, table_json in (
        ("node", subprocess.run(["node", "-p", "JSON.stringify(require('tenure')._errorTable())"], check=True,
                                capture_output=True, text=True, env={**os.environ, "NODE_PATH": node_path}).stdout),
        ("jvm", subprocess.run(["java", "-cp", kotlin_cp, "tenure.test.ErrorDumpKt", "--table"], check=True,
                               capture_output=True, text=True).stdout),
    ):
        if json.loads(table_json) != list(table.values()):
            sys.exit(f"the {language} package carries another error table than the Python one")
    codes = list(coded)
    seen = {
        "python": [python_sees(code) for code in codes],
        "node": lines(["node", "-e", NODE, *codes], env={**os.environ, "NODE_PATH": node_path}),
        "jvm": lines(["java", "-cp", kotlin_cp, "tenure.test.ErrorDumpKt", *codes]),
    }
    problems = []
    for language, records in seen.items():
        if [r["code"] for r in records] != codes:
            problems.append(f"{language}: raised {[r['code'] for r in records]}, expected {codes}")
            continue
        for record in records:
            row = coded[record["code"]]
            suffix = SUFFIX[language]
            outside = language == "python" and "BaseException" in row["python_bases"]
            chain, at = [], row
            while at is not None:
                chain.append(at["class"] + suffix)
                at = table.get(at["parent"]) if at["parent"] else None
            if outside:
                chain = chain[:1]
            want = {
                "class": row["class"] + suffix,
                "chain": chain,
                "own_code": record["code"],
                "fields": {field: EXAMPLE[field] for field in row["fields"]},
            }
            for key, value in want.items():
                if record[key] != value:
                    problems.append(f"{language} {record['code']}: {key} is {record[key]!r}, expected {value!r}")
            if language == "python":
                for base in row["python_bases"]:
                    if not isinstance(record["error"], getattr(builtins, base)):
                        problems.append(f"python {record['code']}: not a {base}")
            if record["message"] != seen["python"][codes.index(record["code"])]["message"]:
                problems.append(f"{language} {record['code']}: message {record['message']!r} differs from Python's")
            print(f"{language:6} {record['code']:28} {record['class']}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"errors: {len(codes)} codes, the same classes, parents, fields and messages in Python, Node and the JVM")


main()
