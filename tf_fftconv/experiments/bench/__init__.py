"""Per-layer benchmark: tf.nn.conv2d vs the tf.signal FFT conv vs tf_fftconv.fft_conv2d, in one run.

``measure``  the cases, the timed steps and the one timing function
``report``   the table, the plot and the progress bar
``cli``      ``python -m tf_fftconv.bench``: arguments, the run, the files asked for
"""
