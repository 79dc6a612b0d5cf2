"""Runs many cases in few child processes, so that a crash or a hang fails one case instead of the
whole test session, and TensorFlow is imported once per child rather than once per case.

The child prints one JSON line per case: ``{"start": key}`` when it begins the case and
``{"done": key, ...}`` with its result when it ends it. A child that dies, or spends more than
``case_timeout`` seconds on one case, gets that case recorded as ``{"outcome": "crash"}`` (with its
exit status and the end of its stderr) or ``{"outcome": "hang"}``, and a new child goes on with the
cases after it.
"""

import json
import queue
import subprocess
import sys
import tempfile
import threading


def _lines(stream, sink):
    for line in stream:
        sink.put(line)
    sink.put(None)


def run_batch(command_for, keys, case_timeout=30.0, startup_timeout=180.0, cwd=None):
    """``{key: result}`` for every key. ``command_for(keys)`` is the child's command line that runs
    those cases, in that order. Returns the children's results and the crash and hang records."""
    results = {}
    remaining = list(keys)
    while remaining:
        with tempfile.TemporaryFile("w+") as stderr:
            proc = subprocess.Popen(command_for(remaining), stdout=subprocess.PIPE, stderr=stderr,
                                    text=True, cwd=cwd)
            lines = queue.Queue()
            threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
            current, started = None, False
            while True:
                try:
                    line = lines.get(timeout=case_timeout if started else startup_timeout)
                except queue.Empty:
                    proc.kill()
                    proc.wait()
                    stuck = current if current is not None else remaining[0]
                    results[stuck] = {"outcome": "hang", "seconds": case_timeout}
                    remaining = remaining[remaining.index(stuck) + 1:]
                    break
                if line is None:  # the child ended
                    rc = proc.wait()
                    if current is not None or (rc != 0 and remaining):
                        stuck = current if current is not None else remaining[0]
                        stderr.seek(0)
                        results[stuck] = {"outcome": "crash", "rc": rc,
                                          "stderr": stderr.read()[-2000:]}
                        remaining = remaining[remaining.index(stuck) + 1:]
                    elif remaining:
                        raise RuntimeError("the child ended (rc %d) without running %s"
                                           % (rc, remaining[:5]))
                    break
                if not line.startswith("{"):
                    continue
                record = json.loads(line)
                started = True
                if "start" in record:
                    current = _key(record["start"], remaining)
                else:
                    key = _key(record.pop("done"), remaining)
                    results[key] = record
                    remaining.remove(key)
                    current = None
    return results


def _key(value, keys):
    """The key that JSON gave back (lists come back as lists, tuples were sent)."""
    for key in keys:
        if key == value or (isinstance(key, tuple) and list(key) == value):
            return key
    raise KeyError(value)


def report(key, **result):
    """In a child: the result of one case, as the parent reads it."""
    print(json.dumps(dict(done=key, **result), default=str), flush=True)


def start(key):
    """In a child: the case about to run (so that a crash or hang is charged to it)."""
    print(json.dumps({"start": key}, default=str), flush=True)


def python_command(script, *args):
    return [sys.executable, script] + [str(a) for a in args]
