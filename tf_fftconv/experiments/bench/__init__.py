"""Per-layer benchmark: tf.nn.conv2d vs the tf.signal FFT conv vs tf_fftconv.fft_conv2d, in one run;
and, with --models, training steps of keras.applications models against their to_fft versions.

``measure``       the cases, the timed steps and the one timing function
``applications``  the keras.applications models, converted and timed in turns
``report``        the table, the plot and the progress bar
``cli``           ``python -m tf_fftconv.bench``: arguments, the run, the files asked for
"""
