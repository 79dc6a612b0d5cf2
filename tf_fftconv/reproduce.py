"""``python -m tf_fftconv.reproduce``: runs ``tf_fftconv.experiments.reproduce``."""

import sys

from tf_fftconv.experiments.reproduce import main

if __name__ == "__main__":
    sys.exit(main())
