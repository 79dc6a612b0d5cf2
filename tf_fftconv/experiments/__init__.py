"""The experiment tools around the library: what its claims are measured with.

``models``     LeNet-5 with spatial or FFT convolutions (Mathieu et al.'s comparison)
``data``       MNIST-style data sets as ``tf.data`` pipelines, never waiting on a network offline
``reproduce``  baseline vs FFT LeNet-5: the table (``python -m tf_fftconv.reproduce``)
``bench``      per-layer timings against ``tf.nn.conv2d`` and the ``tf.signal`` FFT conv
               (``python -m tf_fftconv.bench``)

``import tf_fftconv`` does not import this package.
"""
