"""``python -m tf_fftconv.bench``: runs ``tf_fftconv.experiments.bench.cli``."""

import sys

from tf_fftconv.experiments.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
