"""The timings of problems' candidates: median milliseconds of forward + both gradients per
candidate label, keyed by ``Problem.key()``, kept in the process and, with
``TF_FFTCONV_AUTOTUNE_CACHE`` set, in a JSON file that every process using it adds to; and
``TF_FFTCONV_AUTOTUNE``, which says what is timed without being asked. ``planning`` prefers a
problem's timings to the cost model; ``tuning`` makes them.
"""

import json
import os
import threading

from tf_fftconv.errors import invalid_argument as _invalid

CACHE_ENV = "TF_FFTCONV_AUTOTUNE_CACHE"
AUTOTUNE_ENV = "TF_FFTCONV_AUTOTUNE"
CACHE_SCHEMA = "tf_fftconv.autotune/1"

_LOCK = threading.Lock()
_TIMINGS = {}       # problem.key() -> {label: median ms}
_DISK = {"path": None}


def forget():
    """Forgets every timing of the process (the disk cache is read again when set)."""
    with _LOCK:
        _TIMINGS.clear()
        _DISK["path"] = None


def _load_disk_cache():
    path = os.environ.get(CACHE_ENV) or None
    if path == _DISK["path"]:
        return
    _DISK["path"] = path
    if not path or not os.path.exists(path):
        return
    try:
        with open(path) as f:
            document = json.load(f)
    except (OSError, ValueError) as error:
        raise _invalid("%s=%s cannot be read as a timing cache: %s" % (CACHE_ENV, path, error))
    if document.get("schema") != CACHE_SCHEMA:
        raise _invalid("%s=%s is not a tf_fftconv timing cache (schema %r, expected %r)"
                       % (CACHE_ENV, path, document.get("schema"), CACHE_SCHEMA))
    for key, entry in document.get("entries", {}).items():
        _TIMINGS.setdefault(key, {}).update(entry.get("timings_ms", {}))


def _save_disk_cache():
    path = _DISK["path"]
    if not path:
        return
    document = {"schema": CACHE_SCHEMA, "entries": {}}
    if os.path.exists(path):
        with open(path) as f:
            document = json.load(f)
    for key, timings in _TIMINGS.items():
        document["entries"].setdefault(key, {}).setdefault("timings_ms", {}).update(timings)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temporary = "%s.%d.tmp" % (path, os.getpid())
    with open(temporary, "w") as f:
        json.dump(document, f, indent=1, sort_keys=True)
    os.replace(temporary, path)


def store(problem, timings_ms):
    """Stores measured medians (ms per forward + both gradients) for a problem's candidates."""
    with _LOCK:
        _load_disk_cache()
        _TIMINGS.setdefault(problem.key(), {}).update(timings_ms)
        _save_disk_cache()


def cached_timings(problem):
    with _LOCK:
        _load_disk_cache()
        return dict(_TIMINGS.get(problem.key(), {}))


def _autotune_setting():
    """``TF_FFTCONV_AUTOTUNE``: "1" times every problem an eager ``algorithm="auto"`` call
    meets; "0" times nothing unasked; unset, ``FFTConv2D`` times its close calls on a GPU."""
    value = os.environ.get(AUTOTUNE_ENV, "").strip().lower()
    if value == "":
        return "close calls"
    if value in ("0", "off", "false", "no"):
        return "off"
    if value in ("1", "on", "true", "yes"):
        return "all"
    raise _invalid("%s must be 0 or 1, got %r" % (AUTOTUNE_ENV, value))


def autotune_enabled():
    """``TF_FFTCONV_AUTOTUNE=1``: eager calls of ``algorithm="auto"`` time the candidates of a
    problem not timed yet (off by default)."""
    return _autotune_setting() == "all"


def close_call_timing_enabled():
    """Whether ``FFTConv2D`` times its close calls when built (``TF_FFTCONV_AUTOTUNE`` not 0)."""
    return _autotune_setting() != "off"
