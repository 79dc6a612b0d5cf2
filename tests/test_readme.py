"""README.md is a contract: every ```python block in it runs as written, each in a fresh Python."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")


def python_blocks(text):
    return re.findall(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


BLOCKS = python_blocks(open(README).read())


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 2
    assert python_blocks("text\n```python\nprint(1)\n```\n```sh\nls\n```\n") == ["print(1)\n"]


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable, "-c", BLOCKS[index]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (
        f"README block {index + 1}:\n{BLOCKS[index]}\n{done.stderr[-3000:]}")
