"""Keras layers over `tf_fftconv.fft_conv2d` and `fft_depthwise_conv2d`: drop-ins for
`keras.layers.Conv2D` and `keras.layers.DepthwiseConv2D`."""

import dataclasses
import numbers
import operator

import keras
import tensorflow as tf

from tf_fftconv import conv as _conv
from tf_fftconv import cost_model as _cost_model
from tf_fftconv import planning as _planning
from tf_fftconv import tuning as _tuning

_DATA_FORMATS = {"channels_last": "NHWC", "channels_first": "NCHW"}
# Dtypes the ops run in (float16 and bfloat16 store half precision and compute in float32).
_OP_DTYPES = (tf.float32, tf.float64, tf.float16, tf.bfloat16)


class _FFTOptions:
    """What both layers add to their Keras base: the options passed to the op, the plans each
    input shape got (for ``explain``), the close-call timing when built."""

    def _init_fft_options(self, fft_size, algorithm, tile, memory_budget):
        self.fft_size = _positive_int_or_none(fft_size, "fft_size")
        self.tile = _positive_int_or_none(tile, "tile")
        if algorithm not in _planning.ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(_planning.ALGORITHMS)}, got "
                             f"{algorithm!r}")
        if algorithm == "spatial" and (self.fft_size is not None or self.tile is not None):
            raise ValueError("fft_size and tile set the FFT path, but algorithm is \"spatial\"")
        self.algorithm = algorithm
        try:
            _planning.parse_budget(memory_budget)
        except tf.errors.InvalidArgumentError as error:
            raise ValueError(error.message) from None
        # Kept as given (a number of bytes or a string such as "512M"), so the config stays JSON.
        self.memory_budget = (operator.index(memory_budget) if isinstance(memory_budget,
                                                                         numbers.Integral)
                              else memory_budget)
        self._built_input_shape = None
        # Problem -> the plan its last trace or eager call followed (for explain).
        self._plans = _PlanLog()
        # Whether a gradient with respect to the layer's input is taken in training: False once
        # the layer is called on a Keras tensor that no trainable weight leads to (a model's first
        # layer); then neither path computes it, and the plan compares what is computed.
        self._input_gradient = True

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, keras.KerasTensor):
            self._input_gradient = _reached_by_trainable_weights(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def _epilogue(self):
        """What follows the convolution in this layer that tf.nn.conv2d can fuse
        (``problem.Problem.epilogue``): the bias, and an activation fused with it (ReLU,
        which the FFT path takes into its transforms on a CPU, or another)."""
        if not self.use_bias:
            return ""
        if _activation_of_the_ops(self.activation) == "relu":
            return "bias+relu"
        name = getattr(self.activation, "__name__", "")
        return "bias+activation" if name in _FUSED_ACTIVATIONS else "bias"

    def _call_with_epilogue(self, inputs, kernel, **options):
        """Keras' call (the convolution, the bias, the activation) with the bias and a linear or
        ReLU activation handed to the convolution, which on a CPU's FFT path applies them in its
        transforms (``cost_model.fuses_epilogue``); any other activation follows as Keras applies
        it."""
        activation = _activation_of_the_ops(self.activation)
        outputs = self._fft_convolution(inputs, kernel,
                                        bias=self.bias if self.use_bias else None,
                                        activation=activation or "linear", **options)
        if activation is None:
            return self.activation(outputs)
        return outputs

    def _confirm_close_call(self, input_shape):
        self._built_input_shape = tuple(input_shape)
        if self.algorithm == "auto" and self.fft_size is None and self.tile is None:
            # A close call of the cost model on a GPU is timed once, here, where Python runs
            # eagerly (traces of the layer plan from the timings; tuning.confirm_close_call).
            # Keras compiles a model's step with XLA on a GPU unless told not to, and XLA
            # changes what each path costs (cost_model.COMPILED_COSTS): both problems are
            # confirmed where the device has compiled costs, each timed as it will run.
            problem = self.tuning_arguments(input_shape)["problem"]
            for compiled in _cost_model.timed_modes(problem):
                _tuning.confirm_close_call(dataclasses.replace(problem, compiled=compiled),
                                           self.memory_budget)

    def _fft_convolution(self, inputs, kernel, bias=None, activation="linear", **options):
        """The op on ``inputs`` and ``kernel`` (and ``bias``, then ``activation``: "linear" or
        "relu") in the dtype the ops run in (the compute dtype, or float32 for one they do not
        take), the result in the compute dtype."""
        compute_dtype = inputs.dtype
        op_dtype = compute_dtype if compute_dtype in _OP_DTYPES else tf.float32
        if bias is not None:
            bias = tf.cast(bias, op_dtype)
        x, w = tf.cast(inputs, op_dtype), tf.cast(kernel, op_dtype)
        with tf.name_scope("fft_conv2d"):
            problem = self._problem(_conv.static_dims(x, "x"), _conv.static_dims(w, "w"),
                                    op_dtype, None, **options)
            outputs, plan = _conv.convolve(problem, x, w, self.algorithm, self.fft_size,
                                           self.tile, self.memory_budget, bias, activation)
        self._plans.entries[plan.problem] = plan
        return tf.cast(outputs, compute_dtype)   # a no-op for the dtypes the ops run in

    def _op_dtype(self):
        dtype = tf.as_dtype(self.compute_dtype)
        return dtype.name if dtype in _OP_DTYPES else "float32"

    def _input_shape(self, input_shape):
        input_shape = input_shape or self._built_input_shape
        if input_shape is None:
            raise ValueError(f"layer {self.name!r} is not built: call it, build it, or pass "
                             "input_shape")
        input_shape = tuple(input_shape)
        channels = input_shape[-1] if self.data_format == "channels_last" else input_shape[1]
        return input_shape, channels

    def _problem(self, input_shape, w_shape, dtype, device, **options):
        """The layer's ``Problem`` for an input shape and its filters' shape: the one its call
        computes, and the one ``explain`` and ``autotune`` plan for."""
        return _planning.make_problem(
            input_shape, w_shape, self.padding.upper(), _DATA_FORMATS[self.data_format], dtype,
            device, strides=self.strides, dilations=self.dilation_rate,
            input_gradient=self._input_gradient, epilogue=self._epilogue(), **options)

    def _tuning_arguments(self, input_shape, w_shape, device, **options):
        problem = self._problem(input_shape, w_shape, self._op_dtype(), device, **options)
        return dict(problem=problem, algorithm=self.algorithm, fft_size=self.fft_size,
                    tile=self.tile, memory_budget=self.memory_budget)

    def explain_plans(self, input_shape=None):
        """The plans of ``tf_fftconv.explain(layer)``: for ``input_shape`` if given, else those
        the layer followed, else the plan for the shape it was built for."""
        if input_shape is None and self._plans.entries:
            return list(self._plans.entries.values())
        arguments = self.tuning_arguments(input_shape)
        return [_planning.plan(arguments.pop("problem"), **arguments)]

    def _fft_config(self, config):
        config.update(fft_size=self.fft_size, algorithm=self.algorithm, tile=self.tile,
                      memory_budget=self.memory_budget)
        return config


@keras.saving.register_keras_serializable(package="tf_fftconv")
class FFTConv2D(_FFTOptions, keras.layers.Conv2D):
    """2-D convolution computed in the frequency domain (Mathieu et al., 2013).

    Same arguments, weights and results as `keras.layers.Conv2D`, every `strides`,
    `dilation_rate` and `groups` it accepts included: the kernel is stored
    `[kh, kw, in / groups, out]`, so `set_weights(conv2d.get_weights())` moves weights between
    the two unchanged. On the FFT path a strided convolution is the stride-1 one with every
    stride-th output kept, a dilated one the convolution with the kernel's taps spread apart by
    zeros, and a grouped one a block-diagonal product per frequency bin.

    Args (beyond Conv2D's), passed to `tf_fftconv.fft_conv2d`:
      algorithm: "auto" (default: FFT or `tf.nn.conv2d`, whichever the cost model or a timing
        from `tf_fftconv.autotune` says is faster for the shape, device and dtype), "fft" or
        "spatial". On a GPU, a shape for which the model's two estimates are close is timed
        once when the layer is built (`TF_FFTCONV_AUTOTUNE=0`: the model alone decides).
      fft_size: FFT frame size; None lets the cost model choose. Images that do not fit are
        tiled.
      tile: output tile side for tiling; None lets the cost model choose.
      memory_budget: bytes of spectra the FFT path may hold at once (None:
        `$TF_FFTCONV_MEMORY_BUDGET`, else no budget).

    `tf_fftconv.explain(layer)` says what was chosen for each input shape the layer met, and why.

    The ops lower to XLA custom calls that run the same kernels, so a model holding the layer
    compiles with XLA like one of Conv2D layers: `jit_compile=True`, and Keras' default
    `jit_compile="auto"` on a GPU. `model.compile(jit_compile=False)` is the switch that keeps
    a model off XLA. Inputs of any height and width work, also when Keras retraces with
    unknown sizes (the sizes are then computed in the graph).
    Under a mixed-precision policy (mixed_float16, mixed_bfloat16) the convolution runs in the
    policy's compute dtype (the kernel variable, float32, is cast to it as Conv2D does): the
    half-precision kernels, with float32 transforms and accumulation and half-precision
    spectra, and the output has that dtype.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, fft_size=None, algorithm="auto",
                 tile=None, memory_budget=None, **kwargs):
        super().__init__(
            filters=filters, kernel_size=kernel_size, strides=strides, padding=padding,
            data_format=data_format, dilation_rate=dilation_rate, groups=groups,
            activation=activation, use_bias=use_bias, kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer, activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint, bias_constraint=bias_constraint, **kwargs)
        self._init_fft_options(fft_size, algorithm, tile, memory_budget)

    def build(self, input_shape):
        super().build(input_shape)
        self._confirm_close_call(input_shape)

    def call(self, inputs):
        return self._call_with_epilogue(inputs, self.kernel, groups=self.groups)

    def convolution_op(self, inputs, kernel):
        return self._fft_convolution(inputs, kernel, groups=self.groups)

    def tuning_arguments(self, input_shape=None, device=None):
        """The ``planning`` problem and options of this layer for an input shape (default: the
        shape it was built for)."""
        input_shape, channels = self._input_shape(input_shape)
        return self._tuning_arguments(
            input_shape, tuple(self.kernel_size) + (channels // self.groups, self.filters),
            device, groups=self.groups)

    def get_config(self):
        return self._fft_config(super().get_config())


@keras.saving.register_keras_serializable(package="tf_fftconv")
class FFTDepthwiseConv2D(_FFTOptions, keras.layers.DepthwiseConv2D):
    """Depthwise 2-D convolution computed in the frequency domain: a drop-in for
    `keras.layers.DepthwiseConv2D`.

    Same arguments (`strides`, `dilation_rate` and `depth_multiplier` included), weights
    (`[kh, kw, channels, depth_multiplier]`, then the bias) and results; `set_weights` moves
    weights between the two unchanged. Per frequency bin each channel's spectrum is multiplied by
    its filters' (no matmul), by `tf_fftconv.fft_depthwise_conv2d`. `algorithm`, `fft_size`,
    `tile` and `memory_budget` as `FFTConv2D`'s ("spatial" is `tf.nn.depthwise_conv2d`); mixed
    precision as `FFTConv2D` (the product in float32 spectra).
    """

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, fft_size=None,
                 algorithm="auto", tile=None, memory_budget=None, **kwargs):
        super().__init__(
            kernel_size=kernel_size, strides=strides, padding=padding,
            depth_multiplier=depth_multiplier, data_format=data_format,
            dilation_rate=dilation_rate, activation=activation, use_bias=use_bias,
            depthwise_initializer=depthwise_initializer, bias_initializer=bias_initializer,
            depthwise_regularizer=depthwise_regularizer, bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer, depthwise_constraint=depthwise_constraint,
            bias_constraint=bias_constraint, **kwargs)
        self._init_fft_options(fft_size, algorithm, tile, memory_budget)

    def build(self, input_shape):
        super().build(input_shape)
        self._confirm_close_call(input_shape)

    def call(self, inputs):
        return self._call_with_epilogue(inputs, self.kernel, depthwise=True)

    def tuning_arguments(self, input_shape=None, device=None):
        """The ``planning`` problem and options of this layer for an input shape (default: the
        shape it was built for)."""
        input_shape, channels = self._input_shape(input_shape)
        return self._tuning_arguments(
            input_shape, tuple(self.kernel_size) + (channels, self.depth_multiplier), device,
            depthwise=True)

    def get_config(self):
        return self._fft_config(super().get_config())


# Activations TensorFlow's remapper fuses with a convolution and its bias (oneDNN on a CPU).
_FUSED_ACTIVATIONS = ("relu", "relu6", "elu", "leaky_relu", "tanh", "sigmoid")


def _activation_of_the_ops(activation):
    """The name the convolution takes (``ops.ACTIVATIONS``) for a layer's activation, Keras'
    functions themselves (None, linear, relu with its defaults), else None."""
    if activation is None or activation is keras.activations.linear:
        return "linear"
    if activation is keras.activations.relu:
        return "relu"
    return None


def _reached_by_trainable_weights(tensor):
    """Whether any layer with trainable weights lies upstream of the Keras tensor ``tensor``
    (then training takes gradients through it). Walks the graph of Keras' symbolic calls."""
    seen, stack = set(), [tensor]
    while stack:
        history = getattr(stack.pop(), "_keras_history", None)
        if history is None:
            return True    # not a tensor of a Keras graph: assume the gradient is taken
        operation, node_index = history.operation, history.node_index
        if id(operation) in seen:
            continue
        seen.add(id(operation))
        if getattr(operation, "trainable_weights", None):
            return True
        nodes = getattr(operation, "_inbound_nodes", [])
        if node_index < len(nodes):
            stack.extend(nodes[node_index].input_tensors)
    return False


class _PlanLog:
    """A plain holder, so that Keras does not track the plans as layer state."""

    def __init__(self):
        self.entries = {}


def _positive_int_or_none(value, name):
    """Any integer type (NumPy's too), stored as a Python int so that the config stays JSON."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                              or value < 1):
        raise ValueError(f"{name} must be None or a positive integer, got {value!r}")
    return None if value is None else operator.index(value)
