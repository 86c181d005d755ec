"""The Prometheus test (`scripts/metrics.sh`): a Prometheus server scraping a Rust (axum), a Python
(FastAPI) and a Node (Express) program that contend on one Redis lock and one election, and
`tenure exporter` reading the same store. It checks through Prometheus's HTTP API that the
programs' counters equal the operations they made, that the leader gauge sums to one per
election, that a paused holder shows as a loss and a killed one as an expiry, and that every
PromQL query of the Grafana dashboard returns data; and that each program's health route answers.
It prints one scrape of each program.

Usage: python3 check.py --tenure BIN --rust BIN --python PY --node-path NODE_MODULES
                        --dashboard JSON [--redis URL] [--ops N] [--work DIR]
"""

import argparse
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = ("rust", "python", "node")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 10) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.read().decode()


def eventually(what: str, check, timeout: float = 90):
    """Polls `check` until it returns a true value (returned), or fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError, KeyError) as error:  # not up yet
            last = error
        time.sleep(0.25)
    raise SystemExit(f"FAIL: timed out waiting for {what} (last: {last!r})")


def reaches(what: str, read, wanted, timeout: float = 90) -> None:
    """Polls `read()` until it equals `wanted`, or fails after `timeout` s showing the last value."""
    seen = []
    try:
        eventually(what, lambda: seen.append(read()) or seen[-1] == wanted, timeout)
    except SystemExit:
        raise SystemExit(f"FAIL: {what}: the last value read was {seen[-1] if seen else None!r}") from None


class Program:
    """A child process whose stdout lines are collected."""

    def __init__(self, name: str, argv: list, env=None, log=None) -> None:
        self.name = name
        self.lines: list = []
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log or subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.strip())

    def said(self, text: str) -> bool:
        if self.process.poll() is not None and text not in self.lines:
            raise SystemExit(f"FAIL: {self.name} exited ({self.process.returncode}) before saying {text!r}")
        return text in self.lines

    def tell(self, line: str) -> None:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def signal(self, sig) -> None:
        os.killpg(self.process.pid, sig)

    def end(self) -> None:
        if self.process.poll() is None:
            try:
                self.signal(signal.SIGTERM)
                self.process.wait(10)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                self.signal(signal.SIGKILL)
                self.process.wait()


class Prometheus:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def query(self, promql: str) -> list:
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        answer = json.loads(get(url))
        if answer.get("status") != "success":
            raise SystemExit(f"FAIL: {promql}: {answer}")
        return answer["data"]["result"]

    def values(self, promql: str) -> dict:
        """`{job: value}` of an instant query whose samples carry `job`."""
        return {r["metric"].get("job", ""): float(r["value"][1]) for r in self.query(promql)}

    def scalar(self, promql: str):
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None


def dashboard_queries(path: str) -> list:
    with open(path) as f:
        board = json.load(f)
    queries = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            queries.append((panel["title"], target["expr"]))
    return queries


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tenure", required=True)
    p.add_argument("--rust", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--node-path", required=True)
    p.add_argument("--dashboard", required=True)
    p.add_argument("--redis", default=os.environ.get("TENURE_REDIS_URL", "redis://127.0.0.1:6379"))
    p.add_argument("--ops", type=int, default=30)
    p.add_argument("--work", default="target/metrics")
    a = p.parse_args()
    # Killed or interrupted, the run still ends its children (they run in sessions of their own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    store = f"{a.redis}/0?prefix=metrics-{os.getpid()}-{time.time_ns()}:"
    ports = {name: free_port() for name in (*PROGRAMS, "exporter", "prometheus")}
    log = open(os.path.join(work, "programs.log"), "w")
    children: list = []
    try:
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n")
            for job in (*PROGRAMS, "exporter"):
                f.write(f"  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{ports[job]}']\n")
        prometheus = Prometheus(ports["prometheus"])
        children.append(
            Program(
                "prometheus",
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={work}/data",
                    f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
                    "--log.level=warn",
                ],
                log=log,
            )
        )
        eventually("Prometheus to be ready", lambda: "Ready" in get(f"{prometheus.base}/-/ready"))

        exporter = [a.tenure, "--backend", store, "exporter", "--listen", f"127.0.0.1:{ports['exporter']}"]
        children.append(Program("exporter", exporter + ["--prefix", "metrics-"], log=log))
        victim = Program(
            "victim",
            [a.tenure, "--backend", store, "lock", "metrics-victim", "--lease", "3", "--", "sleep", "600"],
            log=log,
        )
        children.append(victim)
        # A lock held throughout, as a fleet always holds some.
        steady = [a.tenure, "--backend", store, "lock", "metrics-steady", "--", "sleep", "600"]
        children.append(Program("steady", steady, log=log))

        node_env = dict(os.environ, NODE_PATH=a.node_path)
        argv = {
            "rust": [a.rust],
            "python": [a.python, os.path.join(HERE, "contender.py")],
            "node": ["node", os.path.join(HERE, "contender.cjs")],
        }
        programs = {}
        for name in PROGRAMS:
            programs[name] = Program(name, argv[name] + [store, str(ports[name]), str(a.ops)], env=node_env, log=log)
            children.append(programs[name])

        # Once Prometheus has scraped every program, they start: their counters rise across scrapes.
        for job in (*PROGRAMS, "exporter"):
            eventually(f"Prometheus to scrape {job}", lambda: prometheus.values(f'up{{job="{job}"}}') == {job: 1.0})
        for program in programs.values():
            program.tell("go")
        # Every program made its operations, and Prometheus has scraped them since.
        for name, program in programs.items():
            eventually(f"{name} to finish its {a.ops} acquisitions", lambda: program.said(f"done {a.ops}"), 180)
        # (Node's Prometheus exporter adds no unit to a name: tenure_lock_acquire_duration_count.)
        acquired = (
            '{__name__=~"tenure_lock_acquire_duration(_seconds)?_count",name="metrics-shared",outcome="acquired"}'
        )
        released = '{__name__=~"tenure_lock_hold_duration(_seconds)?_count",name="metrics-shared",cause="released"}'
        for promql in (acquired, released):
            wanted = {job: float(a.ops) for job in PROGRAMS}
            reaches(f"{promql} = {a.ops} per program", lambda: prometheus.values(promql), wanted)
            print(f"ok   {promql}: {prometheus.values(promql)}")
        fences = prometheus.values('tenure_lock_fence{name="metrics-shared"}')
        assert max(fences.values()) == 3 * a.ops, f"the last fence is not the number of grants: {fences}"
        print(f"ok   the last fence granted is {3 * a.ops}, one per acquisition: {fences}")

        # One leader per election, whichever program it is.
        eventually(
            "every program to report the election",
            lambda: len(prometheus.values('tenure_election_leader{name="metrics-leader"}')) == 3,
        )
        eventually("one leader", lambda: prometheus.scalar('sum(tenure_election_leader{name="metrics-leader"})') == 1.0)
        store_leader = eventually(
            "the exporter to show one leader",
            lambda: prometheus.query('tenure_store_leader_info{name="metrics-leader"}'),
        )
        assert len(store_leader) == 1, store_leader
        print(
            f"ok   sum(tenure_election_leader) = 1: {prometheus.values('tenure_election_leader')}; the store names worker {store_leader[0]['metric']['worker']}"
        )

        # Each program's health route (its web framework's) answers 200 while its election renews.
        for name in PROGRAMS:
            body = get(f"http://127.0.0.1:{ports[name]}/healthz")  # (a 503 raises)
            print(f"ok   {name} GET /healthz: 200 {body.strip()}")

        # A killed holder: the exporter shows its lease held, then expired.
        held = 'tenure_store_lock_held{name="metrics-victim"}'
        eventually("the victim's lock held", lambda: prometheus.values(held).get("exporter") == 1.0)
        victim.signal(signal.SIGKILL)
        eventually("the victim's lease to expire", lambda: prometheus.values(held).get("exporter") == 0.0, 60)
        assert prometheus.scalar(f"max_over_time({held}[10m])") == 1.0
        print("ok   a killed holder's lock shows held, then expired, in the exporter's view")

        # A paused holder: its keep-alive finds the lease expired, a loss by cause.
        for name, program in programs.items():
            eventually(f"{name} to hold its own lock", lambda: program.said("holding"))
        for program in programs.values():
            program.signal(signal.SIGSTOP)
        time.sleep(5)  # the fault: longer than the 2 s lease
        for program in programs.values():
            program.signal(signal.SIGCONT)
        for name, program in programs.items():
            eventually(f"{name} to see its lease lost", lambda: program.said("lost"), 30)
            loss = f'tenure_lock_losses_total{{job="{name}",name="metrics-held-{name}"}}'
            eventually(f"{loss} = 1", lambda: prometheus.scalar(loss) == 1.0)
            causes = [r["metric"]["cause"] for r in prometheus.query(loss)]
            assert causes == ["expired"], f"{name}: a paused holder's loss by {causes}, not expired"
            print(f"ok   {name}: a paused holder's loss is counted, cause {causes}")

        # Every query of the dashboard returns data.
        failed = []
        for title, expr in dashboard_queries(a.dashboard):
            promql = expr.replace("$__rate_interval", "5m").replace("$__range", "10m")
            result = prometheus.query(promql)
            finite = [r for r in result if not math.isnan(float(r["value"][1]))]
            if not finite:
                failed.append(f"{title}: {promql} -> {result}")
            else:
                print(f"ok   dashboard '{title}': {promql} ({len(finite)} series)")
        if failed:
            raise SystemExit("FAIL: dashboard queries without data:\n" + "\n".join(failed))

        # One scrape of each program, for people.
        for job in (*PROGRAMS, "exporter"):
            text = get(f"http://127.0.0.1:{ports[job]}/metrics")
            with open(os.path.join(work, f"scrape-{job}.txt"), "w") as f:
                f.write(text)
            shown = [l for l in text.splitlines() if l.startswith("tenure_") and "_bucket" not in l]
            print(
                f"--- one scrape of {job} ({len(text.splitlines())} lines; {len(shown)} tenure_ samples without buckets):"
            )
            print("\n".join(shown[:12]))
        print("all metrics checks passed")
    finally:
        for child in reversed(children):
            child.end()
        log.close()


if __name__ == "__main__":
    main()
