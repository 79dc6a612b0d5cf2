"""Model conversion: ``to_fft`` puts the convolutions of a Keras model on this library's layers,
``to_keras`` puts them back on Keras' own for deployment. Both return a new model with the same
weights, built with ``keras.models.clone_model``."""

import warnings

import keras

from tf_fftconv.explanation import explain
from tf_fftconv.layers import FFTConv2D, FFTDepthwiseConv2D

# Keras' layer -> the FFT layer that computes the same function with the same weights. Matched on
# the exact type: a subclass of Conv2D may change what the layer computes.
_KERAS_TO_FFT = {keras.layers.Conv2D: FFTConv2D, keras.layers.DepthwiseConv2D: FFTDepthwiseConv2D}
_FFT_TO_KERAS = {fft: keras_class for keras_class, fft in _KERAS_TO_FFT.items()}
_FFT_LAYERS = tuple(_FFT_TO_KERAS)

# Keras' public convolution layers: a layer that is one of these, or holds one, and is kept as it
# is, is named in a warning.
_KERAS_CONVOLUTIONS = (keras.layers.Conv1D, keras.layers.Conv2D, keras.layers.Conv3D,
                       keras.layers.Conv1DTranspose, keras.layers.Conv2DTranspose,
                       keras.layers.Conv3DTranspose, keras.layers.DepthwiseConv1D,
                       keras.layers.DepthwiseConv2D, keras.layers.SeparableConv1D,
                       keras.layers.SeparableConv2D)


def to_fft(model, algorithm="auto", *, layers=None, min_kernel_size=None, verbose=False,
           **fft_options):
    """A new model in which every ``keras.layers.Conv2D`` is an ``FFTConv2D`` and every
    ``keras.layers.DepthwiseConv2D`` an ``FFTDepthwiseConv2D``, with the same configuration and
    weights; every other layer, FFT layers already there included, is a copy of its own with its
    weights.

    ``model``: a Sequential or functional model (``keras.applications`` models are functional);
    the Sequential and functional models nested in it are converted too. A subclassed model at the
    top raises ValueError: it has no graph to rebuild.

    ``algorithm`` and ``fft_options`` (``fft_size``, ``tile``, ``memory_budget``) are the FFT
    layers' own arguments, the same for every converted layer. ``layers``: a predicate
    ``layer -> bool`` choosing which of the convertible layers to convert; ``min_kernel_size``:
    only those whose larger kernel side is at least this. ``verbose``: prints one line per
    convolution: its name, kernel, input shape, and the path ``tf_fftconv.explain`` gives for it.

    A layer kept as it is although it is or holds a convolution (Keras' other convolution layers,
    a subclass of Conv2D, a custom layer or subclassed model holding one, a quantized layer) is
    named in a UserWarning; so is a model in which nothing was converted. Layers are copied
    through ``get_config``/``from_config``, as ``keras.models.clone_model`` does: one that this
    does not rebuild raises ValueError with its name. The new model is compiled as the original
    was, with a fresh optimizer.
    """
    if min_kernel_size is not None and min_kernel_size < 1:
        raise ValueError(f"min_kernel_size must be None or a positive integer, got "
                         f"{min_kernel_size!r}")
    options = dict(fft_options, algorithm=algorithm)
    _check_fft_options(options)

    def selected(layer):
        return ((min_kernel_size is None or max(layer.kernel_size) >= min_kernel_size)
                and (layers is None or layers(layer)))

    def convert(layer):
        fft_class = _KERAS_TO_FFT.get(type(layer))
        if fft_class is None or getattr(layer, "quantization_mode", None) is not None:
            return None
        if not selected(layer):
            cloner.not_selected.append(layer)
            return None
        return _to_fft_layer(layer, fft_class, options)

    cloner = _Cloner(convert)
    converted = cloner.clone_model(model, "to_fft")
    left_out = {id(layer) for layer in cloner.not_selected}
    unconverted = []
    for layer, inner in cloner.kept:
        keras_convolutions = [c for c in inner if not isinstance(c, _FFT_LAYERS)]
        if keras_convolutions and id(layer) not in left_out:
            unconverted.append(_describe_kept(layer, keras_convolutions))
    if unconverted:
        warnings.warn("to_fft kept these layers as they are, holding convolutions it has no FFT "
                      "layer for: " + "; ".join(unconverted), stacklevel=2)
    if not cloner.converted:
        reason = (f"none of its {len(cloner.not_selected)} convertible convolutions was selected"
                  if cloner.not_selected else
                  "it has no keras.layers.Conv2D or DepthwiseConv2D")
        warnings.warn(f"to_fft converted nothing in model {model.name!r}: {reason}; the result is "
                      "an equal copy", stacklevel=2)
    if verbose:
        print(_report(cloner))
    return converted


def to_keras(model):
    """A new model in which every ``FFTConv2D`` is a ``keras.layers.Conv2D`` and every
    ``FFTDepthwiseConv2D`` a ``keras.layers.DepthwiseConv2D``, with the same configuration (less
    the FFT options) and weights; every other layer is a copy of its own with its weights. The
    result holds nothing of this library: it saves, exports and converts (TFLite, a SavedModel
    served without the op library) as any Keras model. A model without FFT layers gives an equal
    copy.

    Sequential, functional and nested models as ``to_fft``. An FFT layer inside a layer that is
    copied as it is (a custom layer, a subclassed model) raises ValueError with both names: the
    result would need the op library.
    """
    def convert(layer):
        keras_class = _FFT_TO_KERAS.get(type(layer))
        if keras_class is None:
            return None
        return keras_class.from_config(keras_class.get_config(layer))

    cloner = _Cloner(convert)
    converted = cloner.clone_model(model, "to_keras")
    for layer, inner in cloner.kept:
        if isinstance(layer, _FFT_LAYERS):
            raise ValueError(f"to_keras does not know layer {layer.name!r} "
                             f"({type(layer).__name__}), a subclass of an FFT layer: the result "
                             "would need the op library")
        left = [sub for sub in inner if isinstance(sub, _FFT_LAYERS)]
        if left:
            raise ValueError(f"to_keras cannot take the FFT layers out of layer {layer.name!r} "
                             f"({type(layer).__name__}): it copies that layer as it is, and it "
                             "holds " + ", ".join(f"{sub.name!r} ({type(sub).__name__})"
                                                  for sub in left))
    return converted


class _Cloner:
    """``keras.models.clone_model``'s clone function: each layer that ``convert`` returns a
    replacement for is replaced, nested Sequential and functional models are cloned the same way,
    every other layer is copied through its config. Records each original with its copy, for the
    weights and for the report."""

    def __init__(self, convert):
        self.convert = convert
        self.copies = {}         # id(original layer) -> its copy: a layer used twice stays shared
        self.pairs = []          # (original, copy) of each layer copied whole, for its weights
        self.converted = []      # (original, copy) of each replaced layer
        self.not_selected = []   # convertible layers left out by the caller's choice
        self.kept = []           # (original, the convolutions in it) of each layer copied as is

    def clone_model(self, model, caller):
        if not _is_graph_model(model):
            raise ValueError(f"{caller} converts Sequential and functional models; model "
                             f"{model.name!r} is a {type(model).__name__}, a subclassed model "
                             "with no graph of layers to rebuild. Convert the layers it builds "
                             "(FFTConv2D and FFTDepthwiseConv2D take Conv2D's and "
                             "DepthwiseConv2D's arguments and weights), or build it as a "
                             "functional model")
        copy = self._clone_graph(model)
        for original, layer_copy in self.pairs:
            if getattr(original, "weights", None):
                layer_copy.set_weights(original.get_weights())
        return copy

    def _clone_graph(self, model):
        if isinstance(model, keras.Sequential):
            return keras.models.clone_model(model, clone_function=self.clone_layer)
        return keras.models.clone_model(model, input_tensors=_inputs_like(model),
                                        clone_function=self.clone_layer)

    def clone_layer(self, layer):
        if id(layer) in self.copies:
            return self.copies[id(layer)]
        if _is_graph_model(layer):
            copy = self._clone_graph(layer)
        else:
            copy = self.convert(layer)
            if copy is not None:
                self.converted.append((layer, copy))
            else:
                copy = _copy_layer(layer)
                self.kept.append((layer, _convolutions_in(layer)))
            self.pairs.append((layer, copy))
        self.copies[id(layer)] = copy
        return copy


def _to_fft_layer(layer, fft_class, options):
    """``fft_class`` with ``layer``'s config and the FFT options; ValueError naming the fields if
    the new layer's Keras config would differ from ``layer``'s (a field the FFT layer does not
    honour)."""
    config = layer.get_config()
    fft_layer = fft_class.from_config({**config, **options})
    kept = type(layer).get_config(fft_layer)
    differing = sorted(key for key in set(config) | set(kept)
                       if config.get(key, _MISSING) != kept.get(key, _MISSING))
    if differing:
        raise ValueError(f"to_fft cannot convert layer {layer.name!r} ({type(layer).__name__}): "
                         f"{fft_class.__name__} would not keep its "
                         + ", ".join(f"{key}={config.get(key, _MISSING)!r}" for key in differing))
    return fft_layer


_MISSING = object()


def _copy_layer(layer):
    try:
        return type(layer).from_config(layer.get_config())
    except Exception as error:   # any failure of a custom layer's config round trip
        raise ValueError(f"cannot copy layer {layer.name!r} ({type(layer).__name__}) through "
                         f"get_config/from_config, as keras.models.clone_model does: {error}"
                         ) from error


def _check_fft_options(options):
    """ValueError, before any layer is copied, for an option that is not one the FFT layers add to
    Keras' arguments (the keys their config adds), or a value they refuse."""
    probe = FFTDepthwiseConv2D(1)
    names = set(probe.get_config()) - set(keras.layers.DepthwiseConv2D.get_config(probe))
    unknown = set(options) - names
    if unknown:
        raise ValueError(f"to_fft: unknown FFT option(s) {', '.join(sorted(unknown))}; the FFT "
                         f"layers take {', '.join(sorted(names))}")
    FFTDepthwiseConv2D(1, **options)


def _inputs_like(model):
    """New inputs for a functional model's copy, each with its input layer's shape, dtype and name
    (clone_model on its own names them after the tensors, and the names are the model's
    interface: a dict of inputs, a SavedModel's signature)."""
    names = {id(layer.output): layer.name for layer in model.layers
             if isinstance(layer, keras.layers.InputLayer)}
    return keras.tree.map_structure(
        lambda tensor: keras.Input(batch_shape=tensor.shape, dtype=tensor.dtype,
                                   name=names.get(id(tensor), tensor.name)), model.input)


def _is_graph_model(layer):
    """A Sequential or functional model (``keras.models.clone_model`` rebuilds its graph); a
    functional model is a Model with operations."""
    return isinstance(layer, keras.Sequential) or (isinstance(layer, keras.Model)
                                                   and hasattr(layer, "operations"))


def _convolutions_in(layer):
    """The Keras and FFT convolution layers that ``layer`` is or holds in its attributes (lists,
    tuples and dicts of them included)."""
    found, seen, stack = [], set(), [layer]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, keras.layers.Layer):
            if isinstance(item, _KERAS_CONVOLUTIONS):
                found.append(item)
            stack.extend(vars(item).values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


def _describe_kept(layer, convolutions):
    if convolutions == [layer]:
        if type(layer) in _KERAS_TO_FFT:
            return f"{layer.name!r} ({type(layer).__name__}, quantized)"
        return f"{layer.name!r} ({type(layer).__name__})"
    return (f"{layer.name!r} ({type(layer).__name__}, holding "
            + ", ".join(f"{c.name!r} ({type(c).__name__})" for c in convolutions) + ")")


def _report(cloner):
    """One line per convolution of the model: converted ones with the path ``explain`` gives for
    the shape each was built for, then those left out by the caller's choice."""
    rows = [("layer", "type", "kernel", "input", "path")]
    for original, layer in cloner.converted:
        path = _chosen(explain(layer)) if layer.built else "not built"
        rows.append((layer.name, f"{type(original).__name__} -> {type(layer).__name__}",
                     _kernel(layer), _input_shape(original), path))
    for layer in cloner.not_selected:
        rows.append((layer.name, type(layer).__name__, _kernel(layer), _input_shape(layer),
                     "kept: not selected"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1]
             for row in rows]
    heading = (f"to_fft: {len(cloner.converted)} convolution(s) converted, "
               f"{len(cloner.not_selected)} not selected")
    return "\n".join([heading] + lines)


def _kernel(layer):
    text = "x".join(map(str, layer.kernel_size))
    if max(layer.strides) > 1:
        text += " /" + "x".join(map(str, layer.strides))
    if max(layer.dilation_rate) > 1:
        text += " dil " + "x".join(map(str, layer.dilation_rate))
    if getattr(layer, "groups", 1) > 1:
        text += f" groups {layer.groups}"
    return text


def _input_shape(layer):
    try:
        return str(tuple(layer.input.shape))
    except (AttributeError, ValueError):   # never called, or called on several inputs
        return "?"


def _chosen(explanation):
    """The ``chosen:`` line of ``explain``'s text (the first input shape's)."""
    for line in explanation.splitlines():
        if line.strip().startswith("chosen:"):
            return line.split("chosen:", 1)[1].strip()
    return explanation.splitlines()[0] if explanation else "?"
