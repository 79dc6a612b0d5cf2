"""LeNet-5 and a large-kernel ConvNet with spatial or frequency-domain convolutions, for the
baseline vs FFT comparison."""

import keras

from tf_fftconv.layers import FFTConv2D, FFTDepthwiseConv2D

# conv -> (layer class, its extra arguments): "fft" is the FFT path always (Mathieu's LeNet),
# "auto" lets FFTConv2D choose per layer between it and spatial convolution.
CONV_LAYERS = {"spatial": (keras.layers.Conv2D, {}),
               "fft": (FFTConv2D, {"algorithm": "fft"}),
               "auto": (FFTConv2D, {"algorithm": "auto"})}


def lenet5(conv="fft", input_shape=(32, 32, 1), num_classes=10, *, activation="relu",
           pooling="max", data_format=None, fft_size=None, name=None):
    """LeNet-5 (LeCun et al., 1998) as used for the MNIST comparison of Mathieu et al.

    Layers: [zero padding to 32 x 32] -> conv 5x5, 6 maps -> pool 2x2 -> conv 5x5, 16 maps
    -> pool 2x2 -> flatten (16 x 5 x 5) -> dense 120 -> dense 84 -> dense `num_classes`.
    The models (`conv="spatial"`, `"fft"`, `"auto"`) differ only in their two convolution
    layers (keras.layers.Conv2D, or tf_fftconv.FFTConv2D with algorithm "fft" or "auto"; VALID
    padding); their weights have the same shapes and order, so
    `fft.set_weights(spatial.get_weights())` starts both from the same point.

    Args:
      conv: "fft" (FFTConv2D, always the FFT path), "auto" (FFTConv2D choosing per layer) or
        "spatial" (keras.layers.Conv2D).
      input_shape: one example, in `data_format` layout. Images smaller than 32 x 32 (such as
        MNIST's 28 x 28) are zero-padded to 32 x 32 (centred) by a ZeroPadding2D layer.
      num_classes: size of the output.
      activation: hidden-layer activation ("relu"; "tanh" for LeCun's original).
      pooling: "max" or "average" (LeCun's subsampling).
      data_format: "channels_last" or "channels_first"; default keras.config.image_data_format().
      fft_size: passed to the FFTConv2D layers (ignored by the spatial model; with "auto" it
        makes the layers take the FFT path).

    Returns:
      An uncompiled keras.Model whose output is **logits** (no softmax): train it with
      `keras.losses.SparseCategoricalCrossentropy(from_logits=True)`; apply
      `keras.activations.softmax` for probabilities.
    """
    if conv not in CONV_LAYERS:
        raise ValueError(f"conv must be one of {sorted(CONV_LAYERS)}, got {conv!r}")
    if pooling not in ("max", "average"):
        raise ValueError(f"pooling must be 'max' or 'average', got {pooling!r}")
    data_format = data_format or keras.config.image_data_format()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', "
                         f"got {data_format!r}")
    input_shape = tuple(input_shape)
    if len(input_shape) != 3:
        raise ValueError(f"input_shape must be (H, W, C) or (C, H, W), got {input_shape}")
    height, width = input_shape[:2] if data_format == "channels_last" else input_shape[1:]

    conv_layer, conv_kwargs = CONV_LAYERS[conv]
    if conv_layer is FFTConv2D:
        conv_kwargs = dict(conv_kwargs, fft_size=fft_size)
    pool_layer = keras.layers.MaxPooling2D if pooling == "max" else keras.layers.AveragePooling2D

    inputs = keras.Input(shape=input_shape, name="image")
    x = inputs
    pad_h, pad_w = max(0, 32 - height), max(0, 32 - width)
    if pad_h or pad_w:
        x = keras.layers.ZeroPadding2D(
            ((pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2)),
            data_format=data_format, name="pad_to_32")(x)
    x = conv_layer(6, 5, activation=activation, data_format=data_format, name="c1",
                   **conv_kwargs)(x)
    x = pool_layer(2, data_format=data_format, name="s2")(x)
    x = conv_layer(16, 5, activation=activation, data_format=data_format, name="c3",
                   **conv_kwargs)(x)
    x = pool_layer(2, data_format=data_format, name="s4")(x)
    x = keras.layers.Flatten(data_format=data_format, name="flatten")(x)
    x = keras.layers.Dense(120, activation=activation, name="c5")(x)
    x = keras.layers.Dense(84, activation=activation, name="f6")(x)
    outputs = keras.layers.Dense(num_classes, name="logits")(x)
    return keras.Model(inputs, outputs, name=name or f"lenet5_{conv}")


# conv -> (depthwise layer class, its extra arguments), for largekernel's large kernels.
DEPTHWISE_LAYERS = {"spatial": (keras.layers.DepthwiseConv2D, {}),
                    "fft": (FFTDepthwiseConv2D, {"algorithm": "fft"}),
                    "auto": (FFTDepthwiseConv2D, {"algorithm": "auto"})}


def largekernel(conv="fft", input_shape=(28, 28, 1), num_classes=10, *, widths=(32, 64, 128),
                kernels=(27, 13, 7), blocks=1, activation="relu", data_format=None, name=None):
    """A small large-kernel ConvNet in the style of RepLKNet (Ding et al., 2022).

    A 3x3 stem to ``widths[0]`` channels, then one stage per kernel size: ``blocks`` residual
    blocks of [1x1 convolution, activation, depthwise ``k x k`` convolution (SAME), activation,
    1x1 convolution], a 3x3 convolution of stride 2 to the next width between stages (28 -> 14 -> 7
    pixels for MNIST), then global average pooling and a dense layer to ``num_classes`` logits.
    The models differ only in their depthwise layers (``keras.layers.DepthwiseConv2D``, or
    ``tf_fftconv.FFTDepthwiseConv2D`` with algorithm "fft" or "auto"): their weights have the same
    shapes and order, so ``fft.set_weights(spatial.get_weights())`` starts both from one point.

    Args:
      conv: "fft", "auto" or "spatial", as ``lenet5``'s.
      input_shape: one example, in ``data_format`` layout.
      num_classes: size of the output.
      widths: channels of each stage.
      kernels: the depthwise kernel size of each stage (as many as ``widths``).
      blocks: residual blocks per stage.
      activation: of the stem, the stride-2 and the first 1x1 convolutions and the depthwise
        layers: "relu" (default) or any Keras activation ("tanh" is smooth: the twins' gradients
        then agree to float32 rounding everywhere, docs/keras.md).
      data_format: "channels_last" or "channels_first"; default keras.config.image_data_format().

    Returns:
      An uncompiled keras.Model whose output is logits; ``compile_lenet`` compiles it too.
    """
    if conv not in DEPTHWISE_LAYERS:
        raise ValueError(f"conv must be one of {sorted(DEPTHWISE_LAYERS)}, got {conv!r}")
    if len(widths) != len(kernels) or not widths:
        raise ValueError(f"widths and kernels must be as long as each other and not empty, got "
                         f"{widths} and {kernels}")
    data_format = data_format or keras.config.image_data_format()
    depthwise_layer, depthwise_kwargs = DEPTHWISE_LAYERS[conv]
    layers = keras.layers

    inputs = keras.Input(shape=tuple(input_shape), name="image")
    x = layers.Conv2D(widths[0], 3, padding="same", activation=activation,
                      data_format=data_format, name="stem")(inputs)
    for stage, (width, kernel) in enumerate(zip(widths, kernels)):
        if stage:
            x = layers.Conv2D(width, 3, strides=2, padding="same", activation=activation,
                              data_format=data_format, name=f"down{stage}")(x)
        for block in range(blocks):
            prefix = f"s{stage}b{block}"
            y = layers.Conv2D(width, 1, activation=activation, data_format=data_format,
                              name=f"{prefix}_in")(x)
            y = depthwise_layer(kernel, padding="same", activation=activation,
                                data_format=data_format, name=f"{prefix}_dw{kernel}",
                                **depthwise_kwargs)(y)
            y = layers.Conv2D(width, 1, data_format=data_format, name=f"{prefix}_out")(y)
            x = layers.Add(name=f"{prefix}_add")([x, y])
    x = layers.GlobalAveragePooling2D(data_format=data_format, name="pool")(x)
    outputs = layers.Dense(num_classes, name="logits")(x)
    return keras.Model(inputs, outputs, name=name or f"largekernel_{conv}")


def compile_lenet(model, learning_rate=1e-3, jit_compile="auto", steps_per_execution=1):
    """Compiles with Adam, sparse categorical cross-entropy on logits and accuracy.

    Everything else is left at Keras' defaults (notably `jit_compile="auto"`, which gives XLA on a
    GPU to both models: FFTConv2D lowers to XLA custom calls; and one step per call of the train
    function, `steps_per_execution=1`).
    """
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=jit_compile,
                  steps_per_execution=steps_per_execution)
    return model
