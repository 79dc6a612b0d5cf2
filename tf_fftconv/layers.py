"""Keras layer over `tf_fftconv.fft_conv2d`: a drop-in for `keras.layers.Conv2D` (stride 1)."""

import numbers
import operator

import keras
import tensorflow as tf

from tf_fftconv import conv as _conv

_DATA_FORMATS = {"channels_last": "NHWC", "channels_first": "NCHW"}
# Dtypes the ops compute in; anything else (float16, bfloat16) is computed in float32.
_OP_DTYPES = (tf.float32, tf.float64)


@keras.saving.register_keras_serializable(package="tf_fftconv")
class FFTConv2D(keras.layers.Conv2D):
    """2-D convolution computed in the frequency domain (Mathieu et al., 2013).

    Same arguments, weights and results as `keras.layers.Conv2D` with `strides=1`,
    `dilation_rate=1` and `groups=1`: the kernel is stored `[kh, kw, in, out]`, so
    `set_weights(conv2d.get_weights())` moves weights between the two unchanged.
    Strided, dilated and grouped convolutions are refused with a ValueError.

    Args (beyond Conv2D's):
      fft_size: FFT frame size passed to `tf_fftconv.fft_conv2d`; None lets it choose.

    The ops lower to XLA custom calls that run the same kernels, so a model holding the layer
    compiles with XLA like one of Conv2D layers: `jit_compile=True`, and Keras' default
    `jit_compile="auto"` on a GPU. `model.compile(jit_compile=False)` is the switch that keeps
    a model off XLA. Inputs of any height and width work, also when Keras retraces with
    unknown sizes (the sizes are then computed in the graph).
    Under a mixed-precision policy (mixed_float16, mixed_bfloat16) inputs and kernel are
    cast to float32, the convolution is computed in float32, and the output has the
    policy's compute dtype.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, fft_size=None, **kwargs):
        super().__init__(
            filters=filters, kernel_size=kernel_size, strides=strides, padding=padding,
            data_format=data_format, dilation_rate=dilation_rate, groups=groups,
            activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, **kwargs)
        unsupported = {name: value for name, value in (
            ("strides", self.strides), ("dilation_rate", self.dilation_rate))
            if any(v != 1 for v in value)}
        if self.groups != 1:
            unsupported["groups"] = self.groups
        if unsupported:
            got = ", ".join(f"{k}={v}" for k, v in unsupported.items())
            raise ValueError(
                f"FFTConv2D supports only strides=1, dilation_rate=1 and groups=1 (stride-1, "
                f"undilated, ungrouped convolution); got {got}. Use keras.layers.Conv2D for "
                f"strided, dilated or grouped convolutions.")
        # Any integer type (NumPy's too), stored as a Python int so that the config stays JSON.
        if fft_size is not None and (isinstance(fft_size, bool)
                                     or not isinstance(fft_size, numbers.Integral)
                                     or fft_size < 1):
            raise ValueError(f"fft_size must be None or a positive integer, got {fft_size!r}")
        self.fft_size = None if fft_size is None else operator.index(fft_size)

    def convolution_op(self, inputs, kernel):
        compute_dtype = inputs.dtype
        op_dtype = compute_dtype if compute_dtype in _OP_DTYPES else tf.float32
        outputs = _conv.fft_conv2d(
            tf.cast(inputs, op_dtype), tf.cast(kernel, op_dtype),
            padding=self.padding.upper(), data_format=_DATA_FORMATS[self.data_format],
            fft_size=self.fft_size)
        return tf.cast(outputs, compute_dtype)

    def get_config(self):
        config = super().get_config()
        config["fft_size"] = self.fft_size
        return config
